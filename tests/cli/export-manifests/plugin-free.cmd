export-manifests tests/cli/simulate/data/plugin-free.yaml
