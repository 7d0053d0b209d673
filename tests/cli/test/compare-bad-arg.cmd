test --no-times --compare binpack tests/kiln-test/compare/binpack_copy.policy --arg binpack.weight
