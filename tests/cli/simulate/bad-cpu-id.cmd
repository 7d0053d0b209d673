simulate tests/cli/simulate/data/bad-cpu-id.yaml
