"""`svc-monitor serve` trusting the tests' licence signing key, for a test that must
SIGKILL a licensed service: the key is handed over in TEST_LICENSE_KID and
TEST_LICENSE_PEM, as trusted_for_tests takes it in-process."""

import os

from svc_monitor.cli import main
from svc_monitor.licensing.keys import trusted_for_tests

if __name__ == "__main__":
    with trusted_for_tests(os.environ["TEST_LICENSE_KID"], os.environ["TEST_LICENSE_PEM"]):
        main(["serve"])
