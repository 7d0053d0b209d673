simulate tests/cli/calls/data/bad-result.yaml
