simulate --conf tests/cli/simulate/data/bad-action-arg.conf tests/cli/simulate/data/plugin-free.yaml
