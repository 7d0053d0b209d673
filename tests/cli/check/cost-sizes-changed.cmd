check --cost tests/cli/check/data/cost_shapes.policy --policy-cost-size nodes=50000 --policy-cost-size tasks_per_node=200
