test --no-times --run "^tests/kiln-test/(binpack|gang)/" tests/kiln-test
