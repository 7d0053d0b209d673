test --compare binpack tests/kiln-test/compare/binpack_copy.policy -o json
