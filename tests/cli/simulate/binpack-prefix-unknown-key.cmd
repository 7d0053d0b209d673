simulate tests/cli/simulate/data/binpack-prefix-unknown-key.yaml
