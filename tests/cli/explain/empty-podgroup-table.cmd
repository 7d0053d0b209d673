explain tests/cli/explain/data/empty-podgroup.yaml --output table
