check tests/cli/check/data/too_many_dimensions.policy
