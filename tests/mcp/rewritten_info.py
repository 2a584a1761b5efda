"""INFO of a real server with some fields rewritten, for a RESP server on loopback
(tests/fixtures/hostile_resp.py) to send: what a real server cannot be made to say."""

import re

from tests.anomaly.info import info_text
from tests.fixtures.servers import RunningServer


def rewritten_info(server: RunningServer, fields: dict[str, str]) -> str:
    text = info_text(server)
    for name, value in fields.items():
        text, found = re.subn(rf"^{name}:.*$", f"{name}:{value}\r", text, flags=re.MULTILINE)
        assert found == 1, name
    return text
