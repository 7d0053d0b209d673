simulate tests/cli/calls/data/unknown-fn.yaml
