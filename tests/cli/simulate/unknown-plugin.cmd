simulate tests/cli/simulate/data/unknown-plugin.yaml
