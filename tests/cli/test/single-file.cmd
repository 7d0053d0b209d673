test --no-times tests/kiln-test/gang/all-or-nothing.yaml
