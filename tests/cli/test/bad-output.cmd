test -o yaml tests/kiln-test
