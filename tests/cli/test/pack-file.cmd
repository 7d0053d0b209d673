test --no-times tests/cli/test/data/pack-plugin.yaml --pack examples/packs/team-fairness
