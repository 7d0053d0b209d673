export-manifests tests/cli/export-manifests/missing.yaml
