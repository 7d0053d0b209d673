test --no-times -o junit tests/kiln-test
