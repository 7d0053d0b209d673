simulate --compare-conf tests/cli/simulate/data/compare/spread.conf tests/cli/simulate/data/compare/binpack.conf tests/cli/simulate/data/compare/trace.yaml --until 10m --period 30s
