simulate tests/cli/calls/data/missing-input.yaml
