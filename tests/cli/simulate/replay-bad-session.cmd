simulate --check tests/cli/simulate/data/replay-bad-session.yaml
