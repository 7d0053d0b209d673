simulate --report /tmp/kiln-single-session.html tests/cli/simulate/data/plugin-free.yaml
