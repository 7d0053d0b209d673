simulate --check tests/cli/simulate/data/plugin-free.yaml
