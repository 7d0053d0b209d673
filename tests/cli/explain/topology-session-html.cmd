explain tests/cli/explain/data/topology.yaml --output html --pod c1/a-0
