simulate tests/cli/calls/data/unknown-pod.yaml
