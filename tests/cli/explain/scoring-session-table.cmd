explain tests/cli/explain/data/scoring.yaml
