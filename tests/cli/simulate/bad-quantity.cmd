simulate tests/cli/simulate/data/bad-quantity.yaml
