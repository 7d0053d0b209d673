explain tests/scenarios/topology/gangpreempt-sub-groups-each-in-one-leaf.yaml --output json --pod c1/a0
