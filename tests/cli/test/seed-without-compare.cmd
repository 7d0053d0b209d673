test --seed 3 tests/kiln-test
