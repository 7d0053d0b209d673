simulate --cycles 0 tests/cli/simulate/data/plugin-free.yaml
