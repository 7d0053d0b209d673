test --no-times tests/cli/test/data/pack-plugin-bare-name.yaml --pack examples/packs/team-fairness
