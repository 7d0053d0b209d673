explain tests/cli/explain/data/scoring.yaml --pod c1/nope
