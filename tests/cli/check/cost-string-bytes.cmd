check --cost tests/cli/simulate/data/scan/scan.policy tests/cli/check/data/nested_split.policy tests/cli/check/data/string_append.policy
