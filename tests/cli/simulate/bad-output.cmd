simulate --output yaml tests/cli/simulate/data/plugin-free.yaml
