test tests/kiln-test/does-not-exist
