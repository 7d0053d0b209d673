check --cost tests/cli/check/data/string_compare.policy
