test --compare binpack binpack
