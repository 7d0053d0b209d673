simulate tests/cli/simulate/data/missing-group.yaml
