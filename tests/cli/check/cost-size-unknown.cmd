check --policy-cost-size widgets=5 tests/cli/check/data/nested_range.policy
