test --no-times --compare binpack tests/kiln-test/compare/binpack_full_is_overflow.policy
