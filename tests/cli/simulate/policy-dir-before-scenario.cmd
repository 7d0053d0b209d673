simulate --policy-dir examples/tutorial --check examples/tutorial/tests/research-goes-last.yaml
