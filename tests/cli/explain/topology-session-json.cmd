explain tests/cli/explain/data/topology.yaml --output json
