explain tests/cli/test/data/pack-plugin.yaml --pack examples/packs/team-fairness --pod beta/b-next-0
