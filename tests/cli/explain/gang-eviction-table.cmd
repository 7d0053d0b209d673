explain tests/scenarios/topology/gangpreempt-sub-groups-each-in-one-leaf.yaml --pod c1/a0
