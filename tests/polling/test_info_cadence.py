"""The INFO cadence: each pass reads the sections judged each second, the full INFO comes
every fullInfoIntervalMs, and what a pass carries on from the last full read is marked so,
with the time it was read (docs/features/polling-and-history.md#info-cadence)."""

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from svc_monitor.engine.info import CarriedSections, FieldValue, ParsedInfo, parse_info
from svc_monitor.pipe.observation import Observation
from svc_monitor.polling.info_cadence import EVERY_PASS
from svc_monitor.polling.info_poll import InfoPoller
from svc_monitor.polling.loop import PollLoop, grid_slots
from svc_monitor.web.routes.dashboard import overview
from tests.fixtures.app import AppFactory, RunningApp, target_of
from tests.fixtures.licensing import SigningKey
from tests.fixtures.servers import RunningServer, ServerFactory
from tests.fixtures.waiting import eventually

CONNECTION = "env-default"
# Ten passes a second, a full read every second: the cadence in a test's time.
FAST = {"ANOMALY_POLL_INTERVAL_MS": 100, "FULL_INFO_INTERVAL_MS": 1000}


@pytest.fixture(params=["valkey", "redis7", "redis6"])
def server(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> Iterator[RunningServer]:
    started = server_factory.start(request.param)
    yield started
    server_factory.stop(started)


async def observations(app: RunningApp, count: int) -> list[Observation]:
    """The next `count` observations of the default connection, as live state got them."""
    seen: list[Observation] = []

    async def collected() -> bool:
        latest = app.services.live_state.latest(CONNECTION)
        if latest is not None and (not seen or latest is not seen[-1]):
            seen.append(latest)
        return len(seen) > count

    await eventually(collected, within=20, every=0.01)
    return seen[1:]


class TestCadence:
    async def test_passes_between_full_reads_carry_the_rest_with_its_read_time(
        self, memory_app_factory: AppFactory, server: RunningServer
    ):
        async with memory_app_factory(**FAST, **target_of(server)) as app:
            seen = await observations(app, 25)
        carried = [o for o in seen if o.info.carried is not None]
        full = [o for o in seen if o.info.carried is None]
        if server.kind == "redis6":
            # Redis 6.2 takes one section per INFO: every pass reads the full INFO.
            assert not carried
            return
        # About one full read a second, the other passes slim.
        assert 1 <= len(full) <= 6, [o.info.carried is None for o in seen]
        assert len(carried) >= 18
        for observation in seen:
            info = observation.info
            # Every section of the default INFO is there on every pass ...
            assert {"server", "persistence", *EVERY_PASS} <= set(info.sections)
            assert info.get_str("server", "run_id")
        for observation in carried:
            info = observation.info
            assert info.carried is not None
            # ... the per-second ones read with it, the rest carried, never newer than it.
            assert not any(info.is_carried(name) for name in EVERY_PASS)
            assert info.is_carried("server")
            assert info.is_carried("persistence")
            assert info.carried.read_at_ms < observation.received_at_ms
            assert observation.received_at_ms - info.carried.read_at_ms <= 1500

    async def test_zero_reads_the_full_info_on_every_pass(
        self, memory_app_factory: AppFactory, valkey_server: RunningServer
    ):
        async with memory_app_factory(**FAST) as app:
            response = await app.client.put("/api/settings", json={"fullInfoIntervalMs": 0})
            assert response.status_code == 200
            await asyncio.sleep(0.3)  # a pass in flight may still be slim
            seen = await observations(app, 10)
        assert all(o.info.carried is None for o in seen)

    async def test_a_restarted_server_is_read_in_full_on_the_first_pass_after(
        self, memory_app_factory: AppFactory, server_factory: ServerFactory
    ):
        server = server_factory.start("valkey")
        try:
            # Full reads a minute apart: only the restart can explain a fresh one.
            settings = {**FAST, "FULL_INFO_INTERVAL_MS": 60_000, **target_of(server)}
            async with memory_app_factory(**settings) as app:
                before = (await observations(app, 3))[-1].info.get_str("server", "run_id")
                server_factory.stop(server)
                server = server_factory.start_again(server)
                now_run_id = parse_info(await _read(server, "server")).get_str("server", "run_id")

                async def restarted_seen() -> bool:
                    latest = app.services.live_state.latest(CONNECTION)
                    return (
                        latest is not None and latest.info.get_str("server", "run_id") == now_run_id
                    )

                # A pass or two after the server answers again, not a minute.
                await eventually(restarted_seen, within=5)
        finally:
            server_factory.stop(server)
        assert before != now_run_id


class _Recording(dict[str, FieldValue]):
    """A section's fields that note every read of them."""

    def __init__(self, name: str, fields: dict[str, FieldValue], reads: set[str]) -> None:
        super().__init__(fields)
        self._name = name
        self._reads = reads

    def _read(self) -> None:
        self._reads.add(self._name)

    def get(self, key: str, default: Any = None) -> Any:
        self._read()
        return super().get(key, default)

    def __getitem__(self, key: str) -> FieldValue:
        self._read()
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._read()
        return super().__contains__(key)

    def __iter__(self) -> Any:
        self._read()
        return super().__iter__()

    def items(self) -> Any:
        self._read()
        return super().items()

    def values(self) -> Any:
        self._read()
        return super().values()

    def keys(self) -> Any:
        self._read()
        return super().keys()


@pytest.fixture
async def every_consumer(memory_app_factory: AppFactory, signing_key: SigningKey) -> Any:
    """An app with every feature its licence can open, anomaly detection among them."""
    licence = signing_key.mint(tier="enterprise")
    async with memory_app_factory(NODE_ENV="development", SVC_OFFLINE_LICENSE=licence) as app:
        await observations(app, 2)
        yield app


async def _read(server: RunningServer, *sections: str) -> bytes:
    """INFO as the server sends it, over a socket of our own (no client's parsing)."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        if server.password:
            writer.write(_command("AUTH", server.password))
            await reader.readline()
        writer.write(_command("INFO", *sections))
        header = await reader.readline()
        return (await reader.readexactly(int(header[1:]) + 2))[:-2]
    finally:
        writer.close()


def _command(*args: str) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args
    )


class TestPerSecondConsumers:
    async def test_no_consumer_of_a_slim_pass_reads_a_carried_section(
        self, every_consumer: RunningApp, valkey_server: RunningServer
    ):
        """Every consumer of the pipe (anomaly detectors and rules, thresholds, health's
        readings, live cards, history, CVE) takes a slim pass and reads none of what it
        carries: a section judged each second must be in EVERY_PASS."""
        app = every_consumer
        full = parse_info(await _read(valkey_server))
        reads: set[str] = set()
        source = ParsedInfo(
            {
                name: _Recording(name, fields, reads)
                for name, fields in full.sections.items()
                if name not in EVERY_PASS
            },
            0,
        )
        carried = CarriedSections(int(time.time() * 1000) - 500, source, frozenset(source.sections))
        for _ in range(3):  # past any consumer's first-sight path
            info = parse_info(await _read(valkey_server, *EVERY_PASS))
            info.carry(carried)
            await app.features.pipe.observe(
                Observation(CONNECTION, int(time.time() * 1000), info, round_trip_ms=0.2)
            )
        assert reads == set()

    async def test_the_recording_sees_reads_of_sections_read_with_the_pass(
        self, every_consumer: RunningApp, valkey_server: RunningServer
    ):
        """The check above is no blind one: the same sections, read with the pass, are read
        by the consumers that judge them on full reads (the CVE check, data-loss rule)."""
        app = every_consumer
        reads: set[str] = set()
        for _ in range(3):
            full = parse_info(await _read(valkey_server))
            sections = {
                name: fields if name in EVERY_PASS else _Recording(name, fields, reads)
                for name, fields in full.sections.items()
            }
            await app.features.pipe.observe(
                Observation(
                    CONNECTION, int(time.time() * 1000), ParsedInfo(sections, 0), round_trip_ms=0.2
                )
            )
        assert {"server", "persistence"} <= reads


class TestWhatUsersSee:
    async def test_the_info_api_says_when_the_poller_read_each_section(
        self, memory_app_factory: AppFactory
    ):
        async with memory_app_factory(**FAST) as app:
            answers: list[dict[str, int]] = []

            async def carried_seen() -> bool:
                response = await app.client.get("/api/metrics/info")
                assert response.status_code == 200
                answers.append(response.json()["polledAt"])
                return answers[-1].get("server", 0) < answers[-1].get("memory", 0)

            await eventually(carried_seen, within=10, every=0.03)
        polled = answers[-1]
        assert set(EVERY_PASS) <= set(polled)
        # A slim pass: the server section as of the last full read, under a second before.
        assert 0 < polled["memory"] - polled["server"] <= 1500
        assert polled["persistence"] == polled["server"]
        assert len({polled[name] for name in EVERY_PASS}) == 1

    async def test_the_dashboard_counts_uptime_on_from_the_full_read(
        self, valkey_server: RunningServer
    ):
        full = parse_info(await _read(valkey_server))
        uptime = full.get_int("server", "uptime_in_seconds")
        assert uptime is not None
        read_at = int(time.time() * 1000)
        slim = parse_info(await _read(valkey_server, *EVERY_PASS))
        slim.carry(CarriedSections(read_at, full, frozenset(full.sections) - set(EVERY_PASS)))
        later = Observation(CONNECTION, read_at + 9_000, slim)
        assert overview(later, None).uptime_s == uptime + 9
        assert overview(Observation(CONNECTION, read_at, full), None).uptime_s == uptime


class _Hooks:
    """Only what `_next_due` asks of a loop's hooks: the interval and the grid's size."""

    def __init__(self, connections: int = 100) -> None:
        self.grid_slots = grid_slots(connections)

    def interval_s(self, kind: Any) -> float:
        return 1.0


class TestSharedGrid:
    def test_a_healthy_pass_is_due_on_its_slot_whenever_the_last_one_began(self):
        """Each connection's passes fall on its slot of a grid the process shares, so the
        event loop wakes for a tenth of the fleet at a time, not once per connection."""
        kind = InfoPoller.__new__(InfoPoller).kind()
        loop = PollLoop(kind, _Hooks(), deadline_s=5, slot=0.3)  # type: ignore[arg-type]
        for started in (100.0, 100.29, 100.31, 100.79, 100.81, 101.5):
            due = loop._next_due(started, 1.0)
            assert round(due % 1.0, 6) == 0.3
            assert started + 0.5 < due <= started + 1.5
        loop.failures = 1  # backing off: an interval (times the jitter) after it began
        assert loop._next_due(100.31, 1.05) == pytest.approx(100.31 + 1.0 * 1.05)

    def test_a_large_fleet_gets_more_slots_of_about_the_same_size(self):
        """A thousand connections in ten slots woke a hundred passes at once; the grid grows
        with the fleet so a slot keeps to about PER_SLOT connections, and a loop's place
        rounds down to a slot of the grid as it is now."""
        assert grid_slots(1) == grid_slots(100) == 10
        assert grid_slots(1000) == 20
        kind = InfoPoller.__new__(InfoPoller).kind()
        hooks = _Hooks(1000)
        loop = PollLoop(kind, hooks, deadline_s=5, slot=0.37)  # type: ignore[arg-type]
        assert round(loop._next_due(100.0, 1.0) % 1.0, 6) == 0.35
        hooks.grid_slots = grid_slots(100)  # the fleet shrank: the same loop, a coarser grid
        assert round(loop._next_due(100.0, 1.0) % 1.0, 6) == 0.3
