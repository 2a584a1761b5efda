pytest_plugins = ["tests.fixtures.servers"]
