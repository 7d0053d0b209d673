simulate tests/cli/simulate/data/volcano-plugin.yaml
