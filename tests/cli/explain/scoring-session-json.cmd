explain tests/cli/explain/data/scoring.yaml --output json --pod c1/p-1 --pod c1/big
