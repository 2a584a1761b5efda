"""The metrics receiver as an operator sees it: every drop reason named and counted, the
mapping table, caps, freshness, engine versions, and push connections in the registry."""

import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric, ResourceMetrics

from svc_monitor.otlp.ingest.discovery import MAX_DISCOVERED
from svc_monitor.otlp.ingest.fields import MAX_COMMANDS, MAX_DATABASES
from svc_monitor.pipe.facts import Facts, ServerVersionFacts
from tests.fixtures.app import RunningApp, make_settings, running_app
from tests.otlp.push_payloads import (
    DELTA,
    PROTOBUF,
    answer,
    at,
    body,
    cumulative,
    gauge,
    point,
    reasons,
    resource,
)

PUSHED = ("10.0.0.1", 6379)


class Clock:
    def __init__(self) -> None:
        self.offset_s = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset_s


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def app(clock: Clock) -> AsyncIterator[RunningApp]:
    settings = make_settings(DB_HOST="127.0.0.1", DB_PORT=9, METRICS_EXPORT_PROFILE="full")
    async with running_app(settings, clock=clock) as running:
        yield running


async def register(app: RunningApp, host: str = PUSHED[0], port: int = PUSHED[1]) -> str:
    made = await app.client.post(
        "/api/connections",
        json={"source": "push", "name": f"{host}:{port}", "host": host, "port": port},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def push(app: RunningApp, payload: bytes) -> dict[str, int]:
    sent = await app.client.post("/v1/external/metrics", content=payload, headers=PROTOBUF)
    assert sent.status_code == 200, sent.text
    assert sent.headers["content-type"] == "application/x-protobuf"
    response = answer(sent.content)
    found = reasons(response)
    assert response.partial_success.rejected_data_points == sum(found.values())
    return found


async def info(app: RunningApp, connection_id: str) -> dict[str, Any]:
    got = await app.client.get("/api/metrics/info", headers={"X-Connection-Id": connection_id})
    assert got.status_code == 200, got.text
    sections: dict[str, Any] = got.json()["sections"]
    return sections


async def dropped_counter(app: RunningApp) -> dict[str, float]:
    text = (await app.client.get("/api/prometheus/metrics")).text
    found = {}
    for line in text.splitlines():
        if line.startswith("svc_otlp_metric_points_dropped_total{"):
            reason = line.split('reason="')[1].split('"')[0]
            found[reason] = float(line.rsplit(" ", 1)[1])
    return found


async def test_every_drop_reason_is_named_in_the_answer_and_counted(app: RunningApp) -> None:
    await register(app)
    polled = "127.0.0.1:9"  # the default connection, which we poll
    histogram = Metric(name="redis.memory.used")
    histogram.histogram.data_points.add(count=1)
    summary = Metric(name="redis.memory.used")
    summary.summary.data_points.add(count=1)
    # Fill the keyspace cap, then one more database.
    full_keyspace = cumulative(
        "redis.db.keys", *(point(1, db=str(n)) for n in range(MAX_DATABASES + 1))
    )
    payload = body(
        resource({"service.name": "nobody"}, gauge("redis.memory.used", point(1))),
        resource(at("10.9.9.9", 7000), gauge("redis.memory.used", point(1), point(2))),
        resource(at(*polled.split(":")), gauge("redis.memory.used", point(1))),
        resource(
            at(*PUSHED),
            histogram,
            summary,
            cumulative("redis.keys.expired", point(3), temporality=DELTA),
            gauge("redis.no.such.metric", point(1)),
            gauge("redis.cpu.time", point(1.5, state="nonsense")),
            gauge("redis.memory.used", point(None), point(float("nan")), point(1e308)),
            full_keyspace,
            gauge("redis.memory.rss", point(4096)),
        ),
    )
    found = await push(app, payload)
    assert found == {
        "unidentified": 1,
        "unknown_instance": 2,
        "already_polled": 1,
        "unsupported_type": 2,
        "unsupported_temporality": 1,
        "unmapped_metric": 2,
        "invalid_value": 3,
        "cardinality_limit": 1,
    }
    counted = await dropped_counter(app)
    assert {k: v for k, v in counted.items() if v} == {k: float(v) for k, v in found.items()}
    scrape = (await app.client.get("/api/prometheus/metrics")).text
    accepted = MAX_DATABASES + 1  # the databases that fit, and memory.rss
    assert f"svc_otlp_metric_points_accepted_total {float(accepted)}" in scrape


async def test_the_mapping_table_fills_info_fields_and_skips_the_other_role(
    app: RunningApp,
) -> None:
    connection_id = await register(app)
    found = await push(
        app,
        body(
            resource(
                at(*PUSHED, **{"redis.version": "7.2.5"}),
                gauge("redis.memory.fragmentation_ratio", point(1.25)),
                gauge("redis.maxmemory", point(1 << 30)),
                cumulative("redis.cpu.time", point(12.5, state="sys"), point(3.0, state="user")),
                gauge("redis.role", point(1, role="replica"), point(0, role="primary")),
                gauge("redis.db.keys", point(10, db="0"), point(5, db="db3")),
                gauge("redis.db.expires", point(2, db="0")),
                cumulative("redis.cmd.calls", point(40, cmd="GET")),
                cumulative("redis.cmd.usec", point(400, cmd="get")),
                gauge("redis.commands", point(250)),
                gauge("redis.slaves.connected", point(2)),
                gauge("redis.uptime", point(86400)),
            )
        ),
    )
    assert found == {}  # the primary role's 0 is skipped, not dropped
    sections = await info(app, connection_id)
    assert sections["memory"] == {"mem_fragmentation_ratio": 1.25, "maxmemory": 1 << 30}
    assert sections["cpu"] == {"used_cpu_sys": 12.5, "used_cpu_user": 3.0}
    assert sections["replication"] == {"role": "slave", "connected_slaves": 2}
    assert sections["keyspace"] == {"db0": {"keys": 10, "expires": 2}, "db3": {"keys": 5}}
    assert sections["commandstats"] == {"cmdstat_get": {"calls": 40, "usec": 400}}
    assert sections["stats"] == {"instantaneous_ops_per_sec": 250}
    assert sections["server"] == {"redis_version": "7.2.5", "uptime_in_seconds": 86400}


class TestOptionalReceiverMetrics:
    """The redisreceiver's latency percentiles, replica offset and mode, as INFO fields."""

    async def test_latency_replica_offset_and_mode_fill_their_info_fields(
        self, app: RunningApp
    ) -> None:
        connection_id = await register(app)
        found = await push(
            app,
            body(
                resource(
                    at(*PUSHED),
                    # Seconds, as the receiver converts INFO's microseconds.
                    gauge(
                        "redis.cmd.latency",
                        point(0.000001003, cmd="get", percentile="p50"),
                        point(0.000004015, cmd="get", percentile="p99"),
                        point(0.000011007, cmd="get", percentile="p99.9"),
                        point(0.00002, cmd="CONFIG|GET", percentile="p50"),
                    ),
                    gauge("redis.role", point(1, role="replica"), point(0, role="primary")),
                    gauge("redis.replication.replica_offset", point(123456789)),
                    gauge("redis.mode", point(1, mode="cluster")),
                )
            ),
        )
        assert found == {}
        sections = await info(app, connection_id)
        assert sections["latencystats"] == {
            "latency_percentiles_usec_get": {"p50": 1.003, "p99": 4.015, "p99.9": 11.007},
            "latency_percentiles_usec_config|get": {"p50": 20.0},
        }
        assert sections["replication"] == {"role": "slave", "slave_repl_offset": 123456789}
        assert sections["server"]["redis_mode"] == "cluster"
        # A replica's offset is the one the replication family shows for it.
        scrape = (await app.client.get("/api/prometheus/metrics")).text
        assert any(
            line.startswith("svc_replication_offset{") and line.endswith(" 123456789.0")
            for line in scrape.splitlines()
        ), scrape

    async def test_an_unknown_percentile_mode_or_missing_command_is_unmapped(
        self, app: RunningApp
    ) -> None:
        connection_id = await register(app)
        found = await push(
            app,
            body(
                resource(
                    at(*PUSHED),
                    gauge(
                        "redis.cmd.latency",
                        point(0.001, cmd="get", percentile="p75"),
                        point(0.001, percentile="p50"),
                        point(-1.0, cmd="get", percentile="p50"),
                        point(0.002, cmd="set", percentile="p99"),
                    ),
                    gauge("redis.mode", point(1, mode="galaxy"), point(0, mode="standalone")),
                )
            ),
        )
        assert found == {"unmapped_metric": 3, "invalid_value": 1}
        sections = await info(app, connection_id)
        assert sections["latencystats"] == {"latency_percentiles_usec_set": {"p99": 2000.0}}
        assert "redis_mode" not in sections.get("server", {})

    async def test_latency_entries_go_stale_and_free_their_cap_slots(
        self, app: RunningApp, clock: Clock
    ) -> None:
        connection_id = await register(app)
        latency = gauge(
            "redis.cmd.latency",
            *(point(0.001, cmd=f"c{n}", percentile="p99") for n in range(MAX_COMMANDS)),
        )
        assert await push(app, body(resource(at(*PUSHED), latency))) == {}
        extra = gauge("redis.cmd.latency", point(0.002, cmd="one-more", percentile="p50"))
        assert await push(app, body(resource(at(*PUSHED), extra))) == {"cardinality_limit": 1}
        clock.offset_s = 301  # past the default 300 s window: every entry went quiet
        assert await push(app, body(resource(at(*PUSHED), extra))) == {}
        sections = await info(app, connection_id)
        assert sections["latencystats"] == {"latency_percentiles_usec_one-more": {"p50": 2000.0}}


async def test_instances_in_one_request_map_the_same_attributes_alike(app: RunningApp) -> None:
    other = ("10.0.0.2", 6380)
    ids = [await register(app), await register(app, *other)]

    def scrape(host: str, port: int) -> ResourceMetrics:
        return resource(
            at(host, port),
            cumulative("redis.cpu.time", point(1.5, state="sys"), point(2.5, state="bogus")),
            gauge("redis.db.keys", point(7, db="0")),
            cumulative("redis.cmd.calls", point(3, cmd="0")),  # the same text as db="0"
        )

    found = await push(app, body(scrape(*PUSHED), scrape(*other)))
    assert found == {"unmapped_metric": 2}  # the bogus state, once per instance
    for connection_id in ids:
        sections = await info(app, connection_id)
        assert sections["cpu"] == {"used_cpu_sys": 1.5}
        assert sections["keyspace"] == {"db0": {"keys": 7}}
        assert sections["commandstats"] == {"cmdstat_0": {"calls": 3}}


async def test_the_newer_point_wins_and_a_future_timestamp_counts_as_now(
    app: RunningApp,
) -> None:
    connection_id = await register(app)
    now = time.time_ns()
    await push(app, body(resource(at(*PUSHED), gauge("redis.memory.used", point(200, at_ns=now)))))
    older = now - 60_000_000_000
    await push(
        app, body(resource(at(*PUSHED), gauge("redis.memory.used", point(100, at_ns=older))))
    )
    assert (await info(app, connection_id))["memory"]["used_memory"] == 200
    future = now + 3_600_000_000_000
    await push(
        app, body(resource(at(*PUSHED), gauge("redis.memory.used", point(300, at_ns=future))))
    )
    assert (await info(app, connection_id))["memory"]["used_memory"] == 300
    # An hour-ahead clock did not pin the value: a later real point still replaces it.
    await push(app, body(resource(at(*PUSHED), gauge("redis.memory.used", point(400)))))
    assert (await info(app, connection_id))["memory"]["used_memory"] == 400


async def test_stale_fields_disappear_and_free_their_cap_slots(
    app: RunningApp, clock: Clock
) -> None:
    connection_id = await register(app)
    commands = cumulative("redis.cmd.calls", *(point(1, cmd=f"c{n}") for n in range(MAX_COMMANDS)))
    assert (
        await push(app, body(resource(at(*PUSHED), commands, gauge("redis.memory.used", point(5)))))
        == {}
    )
    extra = cumulative("redis.cmd.calls", point(1, cmd="one-more"))
    assert await push(app, body(resource(at(*PUSHED), extra))) == {"cardinality_limit": 1}
    clock.offset_s = 301  # past the default 300 s window: every entry went quiet
    found = await push(
        app, body(resource(at(*PUSHED), extra, gauge("redis.clients.connected", point(3))))
    )
    assert found == {}
    sections = await info(app, connection_id)
    assert sections["commandstats"] == {"cmdstat_one-more": {"calls": 1}}
    assert "memory" not in sections  # stale: absent, never 0
    assert sections["clients"] == {"connected_clients": 3}


async def test_pushed_commands_store_a_row_only_when_their_calls_move(
    app: RunningApp, clock: Clock
) -> None:
    connection_id = await register(app)
    selected = {"X-Connection-Id": connection_id}

    def commands(get: int, set_: int) -> bytes:
        return body(
            resource(
                at(*PUSHED),
                cumulative("redis.cmd.calls", point(get, cmd="get"), point(set_, cmd="set")),
                cumulative(
                    "redis.cmd.usec", point(get * 10, cmd="get"), point(set_ * 10, cmd="set")
                ),
            )
        )

    async def rows(command: str) -> list[tuple[int, int]]:
        got = await app.client.get(
            f"/api/metrics/commandstats/history?command={command}", headers=selected
        )
        assert got.status_code == 200, got.text
        return [(r["calls"], r["callsDelta"]) for r in got.json()]

    await push(app, commands(10, 5))  # the baseline
    clock.offset_s = 10
    await push(app, commands(10, 5))  # nothing moved
    clock.offset_s = 20
    await push(app, commands(15, 5))  # get moved, set did not
    clock.offset_s = 30
    before_push = time.time()
    await push(app, commands(15, 8))  # set moved, get did not
    after_push = time.time()
    assert await rows("get") == [(15, 5)]
    assert await rows("set") == [(8, 3)]
    got = await app.client.get("/api/metrics/commandstats/summary", headers=selected)
    summary = got.json()
    assert [(s["command"], s["calls"], s["usec"]) for s in summary] == [
        ("get", 15, 150),
        ("set", 8, 80),
    ]
    # Both rows carry the last push's time (the test clock runs 30 s ahead of the wall).
    captured_at = summary[0]["capturedAt"]
    assert captured_at == summary[1]["capturedAt"]
    assert (before_push + 30) * 1000 - 1 <= captured_at <= (after_push + 30) * 1000 + 1


async def test_engine_versions_follow_the_spec_and_tell_the_cve_hook(
    app: RunningApp, clock: Clock
) -> None:
    connection_id = await register(app)
    scans: list[tuple[str, str, str]] = []

    cve = app.features.cve
    told_cve = cve.observe_facts

    def scanner(cid: str, facts: Facts) -> Awaitable[None] | None:
        if isinstance(facts, ServerVersionFacts):
            scans.append((cid, facts.engine, facts.version))
        return told_cve(cid, facts)

    cve.observe_facts = scanner  # type: ignore[method-assign,assignment]

    async def version() -> dict[str, Any]:
        read = (await app.client.get(f"/api/connections/{connection_id}")).json()
        return {"engine": read["engine"], "pushed": read["pushedVersion"]}

    # A Valkey seen through the Redis receiver: redis.version is the 7.2.4 compatibility
    # value, and db.system.name says valkey, so the version to scan is valkey.version.
    valkey_without_version = at(*PUSHED, **{"redis.version": "7.2.4", "db.system.name": "valkey"})
    await push(app, body(resource(valkey_without_version, gauge("redis.memory.used", point(1)))))
    seen = await version()
    assert seen["pushed"] == {
        "type": "valkey",
        "version": None,
        "attribute": "valkey.version",
        "missing": "valkey.version",
    }
    assert scans == []  # nothing to scan until a version arrives

    with_version = {**valkey_without_version, "valkey.version": "8.1.1"}
    await push(app, body(resource(with_version, gauge("redis.memory.used", point(1)))))
    seen = await version()
    assert seen["engine"]["type"] == "valkey"
    assert seen["engine"]["version"] == "8.1.1"
    assert scans == [(connection_id, "valkey", "8.1.1")]

    await push(app, body(resource(with_version, gauge("redis.memory.used", point(2)))))
    assert len(scans) == 1  # same version: no new scan

    upgraded = {**valkey_without_version, "valkey.version": "9.0.0"}
    await push(app, body(resource(upgraded, gauge("redis.memory.used", point(3)))))
    assert scans[-1] == (connection_id, "valkey", "9.0.0")

    clock.offset_s = 6 * 3600 + 1  # every 6 hours, even without a change
    await push(app, body(resource(upgraded, gauge("redis.memory.used", point(4)))))
    assert scans[-1] == (connection_id, "valkey", "9.0.0")
    assert len(scans) == 3


async def test_redis_version_alone_is_scanned_as_redis(app: RunningApp) -> None:
    connection_id = await register(app)
    await push(
        app,
        body(
            resource(
                at(*PUSHED, **{"redis.version": "7.2.4"}), gauge("redis.memory.used", point(1))
            )
        ),
    )
    read = (await app.client.get(f"/api/connections/{connection_id}")).json()
    assert read["pushedVersion"]["type"] == "redis"
    assert read["pushedVersion"]["version"] == "7.2.4"
    # valkey.* names alone mark the newer engine too.
    await push(app, body(resource(at(*PUSHED), gauge("valkey.memory.used", point(1)))))
    read = (await app.client.get(f"/api/connections/{connection_id}")).json()
    assert read["pushedVersion"]["type"] == "valkey"
    assert read["pushedVersion"]["missing"] == "valkey.version"


async def test_push_connections_take_no_credentials_and_own_their_address(
    app: RunningApp,
) -> None:
    client = app.client
    refused = await client.post(
        "/api/connections",
        json={"source": "push", "host": "10.0.0.2", "port": 6379, "password": "x"},
    )
    assert refused.status_code == 422
    assert "password" in refused.json()["message"]
    assert "x" not in refused.json()["message"].replace("svc-monitor", "")
    await register(app)
    twice = await client.post(
        "/api/connections", json={"source": "push", "host": "10.0.0.1", "port": 6379}
    )
    assert twice.status_code == 409
    polled = await client.post(
        "/api/connections", json={"source": "push", "host": "127.0.0.1", "port": 9}
    )
    assert polled.status_code == 409
    assert "polled" in polled.json()["message"]
    listed = (await client.get("/api/connections")).json()
    assert sorted(c["source"] for c in listed) == ["poll", "push"]
    # Never polled: the supervisor runs no loop for it.
    pushed_id = next(c["id"] for c in listed if c["source"] == "push")
    await app.features.supervisor.reconcile()
    assert app.features.supervisor.loops_of(pushed_id) == {}
    # Renaming keeps it a push connection; credentials still refused on edit.
    renamed = await client.put(f"/api/connections/{pushed_id}", json={"name": "edge"})
    assert renamed.status_code == 200
    assert renamed.json()["source"] == "push"
    edit = await client.put(f"/api/connections/{pushed_id}", json={"tls": True})
    assert edit.status_code == 422
    assert "tls" in edit.json()["message"]


async def test_live_only_routes_answer_409_for_a_push_connection(app: RunningApp) -> None:
    connection_id = await register(app)
    scoped = {"X-Connection-Id": connection_id}
    for path in (
        "/api/metrics/slowlog",
        "/api/metrics/clients",
        "/api/metrics/latency/latest",
        "/api/metrics/acl/log",
    ):
        got = await app.client.get(path, headers=scoped)
        assert got.status_code == 409, (path, got.text)
        assert "needs a live connection" in got.json()["message"]


async def test_discovery_records_unregistered_pushers_until_registered(app: RunningApp) -> None:
    named = at("10.7.7.7", 7001, **{"service.name": "cache-eu"})
    await push(app, body(resource(named, gauge("redis.memory.used", point(1)))))
    found = (await app.client.get("/api/connections/discovered")).json()
    assert [(d["address"], d["name"]) for d in found] == [("10.7.7.7:7001", "cache-eu")]
    gone = await app.client.post("/api/connections/discovered/10.7.7.7:7001/dismiss")
    assert gone.status_code == 204
    assert (await app.client.get("/api/connections/discovered")).json() == []
    missing = await app.client.post("/api/connections/discovered/10.1.1.1:1/dismiss")
    assert missing.status_code == 404
    # Registering takes it off the list for good, and its next push is taken.
    await register(app, "10.7.7.7", 7001)
    assert await push(app, body(resource(named, gauge("redis.memory.used", point(1))))) == {}


async def test_discovery_holds_at_most_200_and_can_be_turned_off() -> None:
    async with running_app(make_settings(DB_HOST="127.0.0.1", DB_PORT=9)) as app:
        many = [
            resource(at("10.8.0.1", 1000 + n), gauge("redis.memory.used", point(1)))
            for n in range(MAX_DISCOVERED + 20)
        ]
        await push(app, body(*many))
        assert len((await app.client.get("/api/connections/discovered")).json()) == MAX_DISCOVERED
    async with running_app(
        make_settings(DB_HOST="127.0.0.1", DB_PORT=9, OTLP_DISCOVER_INSTANCES=False)
    ) as app:
        found = await push(
            app, body(resource(at("10.8.0.1", 1000), gauge("redis.memory.used", point(1))))
        )
        assert found == {"unknown_instance": 1}  # still dropped
        assert (await app.client.get("/api/connections/discovered")).json() == []
