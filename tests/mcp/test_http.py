"""The MCP server over streamable HTTP at /mcp, driven by the MCP SDK's own client against
a served app with user control on and a real Valkey: the tools answer, act as the token's
user (admin, member), are refused for a revoked token or none, and are in the activity log."""

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.fixtures.mcp_service import Served, http_session, served_service, text_of
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

# Every read tool, with the arguments it needs, and what its answer must show on a
# standalone Valkey 9 with the Community tier: a summary, or the REST API's refusal.
READ_TOOLS: dict[str, tuple[dict[str, Any], str]] = {
    "diagnose": ({}, "# Diagnosis of"),
    "compare": ({"window_minutes": 5}, "min earlier"),
    "list_instances": ({}, "[default]"),
    "health": ({}, "role: primary"),
    "info_summary": ({}, "memory: used"),
    "slowlog": ({}, "Slow log"),
    "slowlog_patterns": ({}, "Slow log patterns"),
    "slowlog_history": ({}, "Stored slow log"),
    "commandlog": ({"type": "large-reply"}, "COMMANDLOG large-reply"),
    "commandlog_patterns": ({}, "COMMANDLOG slow patterns"),
    "latency_latest": ({}, "Latency events"),
    "latency_history": ({"event": "command"}, "Latency history of command"),
    "latency_doctor": ({}, "LATENCY DOCTOR"),
    "memory_stats": ({}, "MB"),
    "memory_doctor": ({}, "MEMORY DOCTOR"),
    "memory_history": ({}, "Memory snapshots"),
    "clients_summary": ({}, "clients connected"),
    "top_talkers": ({}, "Clients by commands"),
    "idle_clients": ({"idle_seconds": 1}, "idle for 1 s"),
    "acl_audit": ({}, "ACL denials"),
    "cve_findings": ({}, "end of life"),
    "forecast": ({"metric": "usedMemory"}, "usedMemory: now"),
    "webhook_deliveries": ({}, "webhooks"),
    "traces": ({}, "Traces"),
    "migration_analysis": ({}, "no analyses yet"),
}
# Refused by the REST API on this server: what the refusal must say.
REFUSED_READS: dict[str, tuple[dict[str, Any], str]] = {
    "anomalies": ({}, "needs the Pro or Enterprise tier"),
    "anomaly_groups": ({}, "needs the Pro or Enterprise tier"),
    "key_patterns": ({}, "needs the Pro or Enterprise tier"),
    "largest_keys": ({}, "needs the Pro or Enterprise tier"),
    "hot_keys": ({}, "needs the Pro or Enterprise tier"),
    "cluster_nodes": ({}, "Cluster mode is disabled"),
    "cluster_node_stats": ({}, "not a cluster"),
    "cluster_slot_stats": ({}, "not in cluster mode"),
    "cluster_slowlog": ({}, "not a cluster"),
    "vector_indexes": ({}, "No search engine answers on this server"),
    "search_latency": ({}, "No search engine answers on this server"),
}
ADMIN_TOOLS = {
    "add_connection",
    "test_connection",
    "remove_connection",
    "set_default_connection",
    "start_monitor",
    "stop_monitor",
    "resolve_anomaly",
}


@pytest.fixture(scope="module")
def busy_server(server_factory: ServerFactory):
    """Logs every command in the slow log, so the logs and their patterns have entries."""
    server = server_factory.start(
        "valkey", config={"slowlog-log-slower-than": "0", "latency-monitor-threshold": "1"}
    )
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
async def served(busy_server: RunningServer) -> AsyncIterator[Served]:
    async with served_service(busy_server) as service:
        yield service


class TestTools:
    async def test_every_tool_is_listed_with_a_connection_input(self, served: Served):
        async with http_session(served.url, served.tokens["ada"]) as session:
            tools = (await session.list_tools()).tools
        names = {t.name for t in tools}
        assert set(READ_TOOLS) | set(REFUSED_READS) | ADMIN_TOOLS <= names
        for tool in tools:
            assert "connection" in tool.input_schema["properties"], tool.name
            assert tool.description, tool.name
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (tool.name not in ADMIN_TOOLS), tool.name

    @pytest.mark.parametrize("who", ["ada", "mia"])
    async def test_every_read_tool_answers_a_summary(self, served: Served, who: str):
        async with http_session(served.url, served.tokens[who]) as session:
            for name, (arguments, expected) in READ_TOOLS.items():
                result = await session.call_tool(name, arguments)
                assert not result.is_error, (name, text_of(result))
                assert expected in text_of(result), (name, text_of(result))

    async def test_refused_reads_carry_the_rest_apis_reason(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            for name, (arguments, expected) in REFUSED_READS.items():
                result = await session.call_tool(name, arguments)
                assert result.is_error, name
                assert expected in text_of(result), (name, text_of(result))

    async def test_clients_summary_names_an_applications_connections(
        self, served: Served, busy_server: RunningServer
    ):
        workers = [busy_server.client(client_name="billing-worker") for _ in range(3)]
        try:
            for worker in workers:
                worker.ping()
            async with http_session(served.url, served.tokens["mia"]) as session:
                summary = text_of(await session.call_tool("clients_summary", {}))
        finally:
            for worker in workers:
                worker.close()  # type: ignore[no-untyped-call]
        assert "by name: «billing-worker» 3" in summary
        assert "last command: «ping» 3" in summary

    async def test_a_memory_forecast_speaks_megabytes(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            forecast = text_of(await session.call_tool("forecast", {"metric": "usedMemory"}))
        assert forecast.startswith("usedMemory: now ")
        assert " MB, trend " in forecast

    async def test_a_connection_is_chosen_by_name_or_id(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            by_name = text_of(await session.call_tool("info_summary", {"connection": "Default"}))
            by_id = text_of(await session.call_tool("info_summary", {"connection": "env-default"}))
            unknown = await session.call_tool("info_summary", {"connection": "nope"})
        assert "memory: used" in by_name
        assert "memory: used" in by_id
        assert unknown.is_error
        assert "connection: no connection is named or numbered 'nope'" in text_of(unknown)
        assert "Default" in text_of(unknown)

    async def test_bad_input_names_the_field(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            result = await session.call_tool("slowlog", {"limit": 0})
            bad_event = await session.call_tool("latency_history", {"event": "a b"})
        assert result.is_error
        assert "limit" in text_of(result)
        assert bad_event.is_error
        assert "event" in text_of(bad_event)

    async def test_a_long_answer_says_it_was_truncated(self, served: Served):
        answers: list[str] = []
        async with http_session(served.url, served.tokens["mia"]) as session:

            async def two_patterns() -> bool:
                """The patterns are of the stored slow log: its poll may not have run yet
                when the machine is loaded."""
                answers.append(text_of(await session.call_tool("slowlog_patterns", {"limit": 200})))
                return answers[-1].count("\n- ") >= 2

            await eventually(two_patterns, within=30, every=0.5)
            cut = text_of(await session.call_tool("slowlog_patterns", {"limit": 1}))
        full = answers[-1]
        patterns = full.count("\n- ")
        assert cut.count("\n- ") == 1
        # The server logs every command, polls included: a pattern may appear in between.
        shown = re.search(r"\[truncated: (\d+) of (\d+) entries not shown", cut)
        assert shown is not None, cut
        left, total = int(shown[1]), int(shown[2])
        assert total >= patterns
        assert left == total - 1


class TestAccess:
    async def test_a_call_is_recorded_under_its_user(self, served: Served):
        before = await served.activity(action="mcp:memory_doctor")
        async with http_session(served.url, served.tokens["mia"]) as session:
            result = await session.call_tool("memory_doctor", {})
        assert not result.is_error
        entries = await served.activity(action="mcp:memory_doctor")
        assert len(entries) == len(before) + 1
        assert entries[0]["actorName"] == "Mia"
        assert entries[0]["status"] == 200
        assert entries[0]["details"] == {
            "via": "token",
            "request": "GET /api/metrics/memory/doctor",
        }

    async def test_one_entry_per_call_even_when_the_tool_reads_twice(self, served: Served):
        before = await served.activity(action="mcp:acl_audit")
        async with http_session(served.url, served.tokens["ada"]) as session:
            await session.call_tool("acl_audit", {"connection": "Default"})
        entries = await served.activity(action="mcp:acl_audit")
        assert len(entries) == len(before) + 1
        assert entries[0]["actorName"] == "Ada"

    async def test_a_member_is_refused_an_admin_tool_with_the_rest_message(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            result = await session.call_tool(
                "add_connection", {"name": "extra", "host": "127.0.0.1", "port": 1}
            )
        assert result.is_error
        assert "Not allowed: this needs the admin role, and you are a member" in text_of(result)
        listed = await served.owner.get("/api/connections")
        assert "extra" not in {c["name"] for c in listed.json()}

    async def test_an_admin_adds_and_removes_a_connection(
        self, served: Served, valkey_server: RunningServer
    ):
        async with http_session(served.url, served.tokens["ada"]) as session:
            added = await session.call_tool(
                "add_connection",
                {"name": "second", "host": valkey_server.host, "port": valkey_server.port},
            )
            assert not added.is_error, text_of(added)
            assert "Added second" in text_of(added)
            state = await session.call_tool("info_summary", {"connection": "second"})
            assert "memory: used" in text_of(state)
            chosen = await session.call_tool("set_default_connection", {"connection": "second"})
            assert "second" in text_of(chosen)
            listed = text_of(await session.call_tool("list_instances", {}))
            assert "- second (id" in listed
            assert "[default]" in listed.split("- second", 1)[1].split("\n")[0]
            back = await session.call_tool("set_default_connection", {"connection": "Default"})
            assert not back.is_error, text_of(back)
            removed = await session.call_tool("remove_connection", {"connection": "second"})
        assert "Removed second" in text_of(removed)
        names = [e["action"] for e in await served.activity(actor="Ada")]
        assert {"mcp:add_connection", "mcp:remove_connection"} <= set(names)

    async def test_an_admin_starts_and_stops_a_monitor_capture(self, served: Served):
        async with http_session(served.url, served.tokens["ada"]) as session:
            started = await session.call_tool("start_monitor", {"duration_ms": 60_000})
            assert not started.is_error, text_of(started)
            capture_id = int(text_of(started).split("#", 1)[1].split()[0])
            stopped = await session.call_tool("stop_monitor", {"capture_id": capture_id})
        assert not stopped.is_error, text_of(stopped)
        assert f"MONITOR capture #{capture_id} stopped" in text_of(stopped)
        capture = await served.owner.get(f"/api/monitor/sessions/{capture_id}")
        assert capture.json()["status"] == "stopped"
        assert capture.json()["requestedBy"] == "Ada"

    async def test_resolving_an_anomaly_on_community_names_the_tier(self, served: Served):
        async with http_session(served.url, served.tokens["ada"]) as session:
            result = await session.call_tool("resolve_anomaly", {"kind": "group", "id": 1})
        assert result.is_error
        assert "needs the Pro or Enterprise tier" in text_of(result)

    @pytest.mark.parametrize("token", ["revoked", "none", "garbage"])
    async def test_without_a_valid_token_the_endpoint_answers_401(self, served: Served, token: str):
        secret = {"revoked": served.tokens["revoked"], "none": None, "garbage": "svc_pat_x"}[token]
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        headers |= {"Accept": "application/json, text/event-stream"}
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{served.url}/mcp", json=initialize, headers=headers)
        assert response.status_code == 401
        assert response.json()["message"] == "Sign in to use svc-monitor"
        assert response.headers["www-authenticate"].startswith("Bearer")

    async def test_the_sdk_client_cannot_open_a_session_with_a_revoked_token(self, served: Served):
        with pytest.raises(ExceptionGroup) as refused:
            async with http_session(served.url, served.tokens["revoked"]):
                pass
        assert refused.group_contains(MCPError, depth=None)

    async def test_a_page_on_another_site_is_refused(self, served: Served):
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"{served.url}/mcp",
                json={},
                headers={
                    "Authorization": f"Bearer {served.tokens['ada']}",
                    "Origin": "http://evil.example",
                },
            )
        assert response.status_code == 403


class TestResourcesAndPrompts:
    async def test_a_connections_state_is_a_resource(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["svc://connections/{connection}/state"]
            state = await session.read_resource("svc://connections/Default/state")
        text = state.contents[0].text  # type: ignore[union-attr]
        assert "Default (id env-default): connected" in text
        assert "memory: used" in text

    async def test_prompts_name_the_tools_to_call(self, served: Served):
        async with http_session(served.url, served.tokens["mia"]) as session:
            names = {p.name for p in (await session.list_prompts()).prompts}
            slow = await session.get_prompt("why_is_it_slow", {"connection": "Default"})
        assert names == {"why_is_it_slow", "will_it_run_out_of_memory"}
        text = slow.messages[0].content.text  # type: ignore[union-attr]
        assert "'Default'" in text
        assert "slowlog_patterns" in text
        assert "latency_doctor" in text


@pytest.fixture(scope="module")
async def behind_a_proxy(valkey_server: RunningServer) -> AsyncIterator[Served]:
    """An install behind a reverse proxy on loopback, which it trusts."""
    async with served_service(
        valkey_server, TRUST_PROXY=True, TRUSTED_PROXIES="127.0.0.1/32"
    ) as service:
        yield service


class TestBehindAProxy:
    async def test_the_log_records_the_assistants_address_not_the_in_process_call(
        self, behind_a_proxy: Served
    ):
        forwarded = {"X-Forwarded-For": "203.0.113.9"}
        async with http_session(
            behind_a_proxy.url, behind_a_proxy.tokens["ada"], **forwarded
        ) as session:
            result = await session.call_tool("latency_latest", {})
        assert not result.is_error
        entries = await behind_a_proxy.activity(action="mcp:latency_latest")
        assert [(e["actorName"], e["sourceIp"]) for e in entries] == [("Ada", "203.0.113.9")]


@pytest.fixture(scope="module")
async def open_install(valkey_server: RunningServer) -> AsyncIterator[Served]:
    """An install with user control off (WORKSPACE_DISABLED=true): nobody signs in."""
    async with served_service(valkey_server, WORKSPACE_DISABLED=True) as service:
        yield service


class TestUserControlOff:
    async def test_read_tools_work_without_a_token(self, open_install: Served):
        async with http_session(open_install.url, None) as session:
            result = await session.call_tool("info_summary", {})
        assert not result.is_error
        assert "memory: used" in text_of(result)

    @pytest.mark.parametrize("token", [None, "svc_pat_made_up"], ids=["none", "any-header"])
    async def test_admin_tools_need_a_token(self, open_install: Served, token: str | None):
        """With user control off no token names anyone: a header does not unlock them."""
        async with http_session(open_install.url, token) as session:
            result = await session.call_tool("start_monitor", {})
        assert result.is_error
        assert "needs an admin's personal token" in text_of(result)
        captures = await open_install.owner.get("/api/monitor/sessions")
        assert captures.json() == []


class TestADownInstance:
    async def test_health_reports_it_down_with_the_reason(
        self, served: Served, server_factory: ServerFactory
    ):
        doomed = server_factory.start("valkey")
        async with http_session(served.url, served.tokens["ada"]) as session:
            added = await session.call_tool(
                "add_connection", {"name": "doomed", "host": doomed.host, "port": doomed.port}
            )
            assert not added.is_error, text_of(added)
            server_factory.stop(doomed)
            try:
                for _ in range(60):  # bounded: 30 s, until the health check notices
                    health = await session.call_tool("health", {"connection": "doomed"})
                    # The role read fails at once; the status waits for the health check.
                    if "): disconnected" in text_of(health):
                        break
                    await asyncio.sleep(0.5)
            finally:
                await session.call_tool("remove_connection", {"connection": "doomed"})
        assert not health.is_error, text_of(health)
        assert "doomed (id " in text_of(health)
        assert "): disconnected\nengine: unknown, checked " in text_of(health)
        assert f"error: «Error 111 connecting to {doomed.host}:{doomed.port}" in text_of(health)
        assert "role: unavailable (" in text_of(health)
