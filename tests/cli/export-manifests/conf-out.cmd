export-manifests tests/cli/simulate/data/no-expect.yaml -o /dev/null --conf-out -
