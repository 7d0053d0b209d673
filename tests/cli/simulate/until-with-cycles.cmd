simulate --until 1h --cycles 3 tests/cli/simulate/data/plugin-free.yaml
