test --no-times tests/cli/test/data/pack-unlisted
