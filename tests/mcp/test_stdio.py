"""`svc-monitor mcp` over stdio, launched as a desktop assistant launches it, against a
served app with user control on: its tools act as SVC_TOKEN's user through the REST API."""

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fixtures.app import free_port
from tests.fixtures.mcp_service import (
    SVC_MONITOR,
    Served,
    served_service,
    stdio_env,
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


class TestATokenPastedIntoAConfigFile:
    """A token copied into an assistant's JSON configuration often carries a line break or
    spaces around it: they are not part of the token."""

    @pytest.mark.parametrize(
        "pasted", ["{}\n", " {} ", "\t{}\r\n"], ids=["newline", "spaces", "crlf"]
    )
    async def test_whitespace_around_it_is_stripped(
        self, served: Served, tmp_path: Path, pasted: str
    ):
        token = served.tokens["ada"]
        with (tmp_path / "stderr").open("w+") as errlog:
            async with stdio_session(served.url, pasted.format(token), errlog=errlog) as session:
                listed = await session.call_tool("list_instances", {})
                summary = await session.call_tool("info_summary", {})
            errlog.seek(0)
            stderr = errlog.read()
        assert not listed.is_error, text_of(listed)
        assert "[default]" in text_of(listed)
        assert not summary.is_error, text_of(summary)
        assert "memory: used" in text_of(summary)
        assert token not in stderr + text_of(listed) + text_of(summary)
        assert "Traceback" not in stderr, stderr

    def test_whitespace_inside_it_stops_the_command_without_echoing_it(self):
        env = stdio_env("http://127.0.0.1:3001", "svc_pat_half one\nsvc_pat_half two")
        done = subprocess.run(
            [SVC_MONITOR, "mcp"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 2
        assert done.stderr.startswith("svc-monitor: configuration error: SVC_TOKEN: ")
        assert done.stderr.count("\n") == 1, done.stderr
        assert "half" not in done.stderr + done.stdout


class TestAnUnreachableService:
    async def test_each_tool_names_the_url_and_nothing_leaks(self, tmp_path: Path):
        url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
        token = "svc_pat_unreachable_secret"
        with (tmp_path / "stderr").open("w+") as errlog:
            async with stdio_session(url, token, errlog=errlog) as session:
                answers = [
                    await session.call_tool(name, {})
                    for name in ("list_instances", "info_summary", "diagnose", "slowlog")
                ]
                state = await session.read_resource("svc://connections/Default/state")
            errlog.seek(0)
            stderr = errlog.read()
        for answer in answers:
            assert answer.is_error
            assert f"svc-monitor at {url} could not be reached" in text_of(answer)
            assert "SVC_URL" in text_of(answer)
        state_text = state.contents[0].text  # type: ignore[union-attr]
        assert f"svc-monitor at {url} could not be reached" in state_text
        said = stderr + state_text + "".join(text_of(a) for a in answers)
        assert token not in said
        assert "Traceback" not in stderr, stderr


class TestConfiguration:
    def test_a_bad_svc_url_exits_2_naming_it_and_never_the_token(self):
        env = stdio_env("ftp://x", "svc_pat_s3")
        done = subprocess.run(
            [SVC_MONITOR, "mcp"], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 2
        assert done.stderr.startswith("svc-monitor: configuration error: SVC_URL: ")
        assert "svc_pat_s3" not in done.stderr + done.stdout
