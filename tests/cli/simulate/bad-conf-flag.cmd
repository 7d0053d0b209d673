simulate tests/cli/simulate/data/bad-conf-flag.yaml
