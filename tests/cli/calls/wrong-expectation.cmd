simulate --check tests/cli/calls/data/wrong-expectation.yaml
