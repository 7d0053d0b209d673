simulate --conf tests/cli/simulate/data/unknown-action.conf tests/cli/simulate/data/plugin-free.yaml
