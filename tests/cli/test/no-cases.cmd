test tests/kiln-test/compare
