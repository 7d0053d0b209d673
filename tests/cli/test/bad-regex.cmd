test --run "(unclosed" tests/kiln-test
