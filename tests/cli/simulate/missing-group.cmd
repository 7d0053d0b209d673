simulate --check tests/cli/simulate/data/missing-group.yaml
