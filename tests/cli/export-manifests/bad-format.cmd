export-manifests --format toml tests/cli/simulate/data/plugin-free.yaml
