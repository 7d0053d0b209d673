simulate --compare-conf examples/conf/volcano-default.conf examples/packs/team-fairness examples/packs/team-fairness/tests/team-share-order.yaml
