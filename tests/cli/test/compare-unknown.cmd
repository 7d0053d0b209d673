test --compare binpack no_such_plugin
