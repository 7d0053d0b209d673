test --no-times -o json tests/kiln-test/failing tests/kiln-test/gang
