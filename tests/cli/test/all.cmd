test --no-times tests/kiln-test
