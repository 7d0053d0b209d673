simulate --check tests/cli/simulate/data/no-expect.yaml
