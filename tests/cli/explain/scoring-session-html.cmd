explain tests/cli/explain/data/scoring.yaml --output html --pod c1/p-0
