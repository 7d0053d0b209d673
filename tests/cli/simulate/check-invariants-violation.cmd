simulate --check --check-invariants --policy-dir tests/cli/simulate/data/negative-share tests/cli/simulate/data/negative-share.yaml
