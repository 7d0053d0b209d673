simulate --check --conf examples/conf/volcano-helm-capacity.conf tests/cli/simulate/data/helm-capacity.yaml
