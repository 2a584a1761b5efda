pytest_plugins = [
    "tests.fixtures.servers",
    "tests.fixtures.storage",
    "tests.fixtures.app",
    "tests.fixtures.browser",
    "tests.fixtures.licensing",
    "tests.fixtures.workspace",
    "tests.fixtures.broker",
    "tests.fixtures.receiver",
    "tests.fixtures.otlp_receiver",
    "tests.fixtures.sshd",
]
