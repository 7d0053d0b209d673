simulate tests/cli/simulate/data/override-priority.yaml --policy-dir tests/cli/simulate/data/override --allow-builtin-override --check
