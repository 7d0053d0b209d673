check tests/cli/check/data/deep_parens_no_semicolon.policy
