simulate tests/cli/simulate/data/does-not-exist.yaml
