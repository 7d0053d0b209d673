simulate tests/cli/simulate/data/yaml-syntax.yaml
