simulate tests/cli/simulate/data/timestamp-out-of-range.yaml
