simulate --conf tests/cli/simulate/data/unsupported-action.conf tests/cli/simulate/data/plugin-free.yaml
