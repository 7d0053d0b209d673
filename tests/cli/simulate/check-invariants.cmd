simulate --check --check-invariants examples/scenarios/training-cluster.yaml
