explain tests/cli/explain/data/scoring.yaml --at-open --output json --pod c1/p-0
