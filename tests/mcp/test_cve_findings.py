"""`cve_findings` says what the REST findings mean: the release that fixes each CVE as a
version, and the release line's end-of-life date as "until" while it is still supported
and "since" once it has passed."""

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.fixtures.hostile_resp import hostile_server
from tests.fixtures.mcp_service import Served, http_session, served_service, text_of
from tests.fixtures.servers import HOST, RunningServer
from tests.fixtures.waiting import eventually
from tests.mcp.rewritten_info import rewritten_info

# How each entry ends: a version, a list of them (a module advisory's lines), or none yet.
FIXED_IN = re.compile(r" Fixed in (\d+(\.\d+)+(, \d+(\.\d+)+)*|no fixed release yet)\.$")


@pytest.fixture(scope="module")
async def served(valkey_server: RunningServer) -> AsyncIterator[Served]:
    async with served_service(valkey_server) as service:
        yield service


async def findings_of(served: Served, name: str, host: str, port: int) -> tuple[str, Any]:
    """`cve_findings` on a connection added for the call, and the REST body it reads."""
    async with http_session(served.url, served.tokens["ada"]) as session:
        added = await session.call_tool(
            "add_connection", {"name": name, "host": host, "port": port}
        )
        assert not added.is_error, text_of(added)
        try:
            conn_id = await served.connection_id(name)
            rest: dict[str, Any] = {}

            async def scanned() -> bool:  # the scan runs on the connection's first INFO
                found = await served.owner.get(
                    "/api/cve/findings", headers={"X-Connection-Id": conn_id}
                )
                assert found.status_code == 200, found.text
                rest.update(found.json())
                return bool(rest["status"] == "scanned")

            await eventually(scanned, within=30, every=0.5)
            answer = await session.call_tool("cve_findings", {"connection": name})
        finally:
            await session.call_tool("remove_connection", {"connection": name})
    assert not answer.is_error, text_of(answer)
    return text_of(answer), rest


def end_of_life(answer: str) -> str:
    return next(line for line in answer.splitlines() if line.startswith("end of life:"))


def assert_fixed_in_reads_as_versions(answer: str, rest: dict[str, Any]) -> None:
    entries = [line for line in answer.splitlines() if line.startswith("- ")]
    assert entries, answer
    for entry in entries:
        assert FIXED_IN.search(entry), entry
    fixed = 0
    for finding in rest["findings"]:
        shown = [e for e in entries if e.startswith(f"- {finding['id']} ")]
        if shown and finding["fixedIn"]:
            assert shown[0].endswith(f" Fixed in {finding['fixedIn']}."), shown[0]
            fixed += 1
    assert fixed, answer


class TestCveFindings:
    async def test_a_supported_line_is_supported_until_its_date(
        self, served: Served, valkey_server: RunningServer
    ):
        """Valkey 9.0.0 (a RESP server saying so in INFO): 9.0 is supported until a date
        to come, and it has fixes on its own line."""
        info = rewritten_info(valkey_server, {"valkey_version": "9.0.0"})
        async with hostile_server(info) as old:
            answer, rest = await findings_of(served, "valkey-9-0", HOST, old.port)
        eol = rest["endOfLife"]
        assert (eol["cycle"], eol["status"]) == ("9.0", "supported")
        assert end_of_life(answer) == (
            f"end of life: release line «9.0» is supported until {eol['eolDate']}"
        )
        assert rest["findings"], rest
        assert_fixed_in_reads_as_versions(answer, rest)

    async def test_a_line_past_its_date_is_past_end_of_life_since_then(
        self, served: Served, redis7_server: RunningServer
    ):
        answer, rest = await findings_of(served, "redis-7-0", HOST, redis7_server.port)
        eol = rest["endOfLife"]
        assert (eol["cycle"], eol["status"]) == ("7.0", "end_of_life")
        assert end_of_life(answer) == (
            f"end of life: release line «7.0» is past end of life since {eol['eolDate']}"
        )
        assert rest["findings"], rest
        assert_fixed_in_reads_as_versions(answer, rest)
