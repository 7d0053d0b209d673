test --no-times --compare binpack tests/kiln-test/compare/binpack_copy.policy --cases 40
