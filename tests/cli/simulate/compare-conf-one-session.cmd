simulate --compare-conf tests/cli/simulate/data/compare/spread.conf tests/cli/simulate/data/compare/binpack.conf tests/cli/simulate/data/compare/trace.yaml
