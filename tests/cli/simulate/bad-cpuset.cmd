simulate tests/cli/simulate/data/bad-cpuset.yaml
