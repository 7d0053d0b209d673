simulate tests/cli/simulate/data/unknown-key.yaml
