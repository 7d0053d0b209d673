simulate --check tests/cli/simulate/data/replay-mismatch.yaml
