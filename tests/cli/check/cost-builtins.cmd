check --cost gang drf proportion priority predicates nodeorder binpack conformance cdp overcommit resource-strategy-fit capacity pdb nodegroup usage resourcequota task-topology sla extender
