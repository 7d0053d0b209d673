check tests/cli/check/data/list_contains.policy tests/cli/check/data/list_get.policy
