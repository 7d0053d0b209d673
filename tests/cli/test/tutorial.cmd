test --no-times --policy-dir examples/tutorial examples/tutorial/tests
