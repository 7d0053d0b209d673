check --cost tests/cli/check/data/cost_shapes.policy
