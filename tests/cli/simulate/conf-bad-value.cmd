simulate --conf tests/cli/simulate/data/bad-value.conf tests/cli/simulate/data/plugin-free.yaml
