test --no-times tests/kiln-test/binpack/cluster-only.yaml
