simulate tests/cli/calls/data/wrong-input.yaml
