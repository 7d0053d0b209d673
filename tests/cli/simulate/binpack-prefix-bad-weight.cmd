simulate tests/cli/simulate/data/binpack-prefix-bad-weight.yaml
