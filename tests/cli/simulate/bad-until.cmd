simulate --until soon tests/cli/simulate/data/plugin-free.yaml
