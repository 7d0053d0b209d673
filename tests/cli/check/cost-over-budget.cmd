check tests/cli/check/data/nested_range.policy
