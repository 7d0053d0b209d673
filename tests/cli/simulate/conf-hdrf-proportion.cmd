simulate --conf tests/cli/simulate/data/hdrf-proportion.conf tests/cli/simulate/data/plugin-free.yaml
