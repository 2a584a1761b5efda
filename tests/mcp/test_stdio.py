"""`svc-monitor mcp` over stdio, launched as a desktop assistant launches it, against a
served app with user control on: its tools act as SVC_TOKEN's user through the REST API."""

import os
import subprocess
from collections.abc import AsyncIterator

import pytest

from tests.fixtures.mcp_service import (
    SVC_MONITOR,
    Served,
    served_service,
    stdio_session,
    text_of,
)
from tests.fixtures.servers import RunningServer

pytestmark = pytest.mark.slow  # each test starts a `svc-monitor mcp` process


@pytest.fixture(scope="module")
async def served(valkey_server: RunningServer) -> AsyncIterator[Served]:
    async with served_service(valkey_server) as service:
        yield service


class TestStdio:
    async def test_tools_answer_and_are_recorded_under_the_tokens_user(self, served: Served):
        before = await served.activity(action="mcp:info_summary")
        async with stdio_session(served.url, served.tokens["ada"]) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            summary = await session.call_tool("info_summary", {"connection": "Default"})
            patterns = await session.call_tool("slowlog_patterns", {})
        assert {"info_summary", "slowlog_patterns", "add_connection"} <= names
        assert not summary.is_error, text_of(summary)
        assert "memory: used" in text_of(summary)
        assert not patterns.is_error
        entries = await served.activity(action="mcp:info_summary")
        assert len(entries) == len(before) + 1
        assert entries[0]["actorName"] == "Ada"

    async def test_a_member_is_refused_an_admin_tool_with_the_rest_message(self, served: Served):
        async with stdio_session(served.url, served.tokens["mia"]) as session:
            result = await session.call_tool("start_monitor", {})
        assert result.is_error
        assert "Not allowed: this needs the admin role, and you are a member" in text_of(result)

    @pytest.mark.parametrize("token", ["revoked", "none"])
    async def test_without_a_valid_token_each_call_is_refused(self, served: Served, token: str):
        secret = served.tokens["revoked"] if token == "revoked" else None
        async with stdio_session(served.url, secret) as session:
            result = await session.call_tool("info_summary", {})
        assert result.is_error
        assert "Sign in to use svc-monitor (HTTP 401)" in text_of(result)


class TestConfiguration:
    def test_a_bad_svc_url_exits_2_naming_it_and_never_the_token(self):
        env = {"PATH": os.environ.get("PATH", ""), "SVC_URL": "ftp://x", "SVC_TOKEN": "svc_pat_s3"}
        done = subprocess.run(
            [SVC_MONITOR, "mcp"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 2
        assert done.stderr.startswith("svc-monitor: configuration error: SVC_URL: ")
        assert "svc_pat_s3" not in done.stderr + done.stdout
