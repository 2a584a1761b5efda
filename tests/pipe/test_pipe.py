"""The pipe itself (pipe/pipe.py), with real consumers and a real ownership: each
observation and each fact reaches its consumers in the order they were listed, what a
polled connection this replica does not hold brings back goes no further, and forget
reaches each consumer once however many lists it is in."""

import asyncio
from collections.abc import AsyncIterator

import pytest

from svc_monitor.config import StorageType
from svc_monitor.engine.info import parse_info
from svc_monitor.pipe.facts import AclFacts, Facts
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.pipe.observation import Observation
from svc_monitor.pipe.pipe import Pipe
from svc_monitor.replicas.lease_store import LeaseStore
from svc_monitor.replicas.ownership import LeasedOwnership
from svc_monitor.replicas.service import ReplicaRegistry
from svc_monitor.replicas.store import ReplicaStore
from svc_monitor.storage.database import Database
from tests.fixtures.app import make_settings

Log = list[tuple[str, object]]


class Recorder:
    """A consumer of both kinds that writes what it is handed into a shared log."""

    def __init__(self, name: str, log: Log) -> None:
        self.name = name
        self.log = log

    def observe(self, observation: Observation) -> None:
        self.log.append((self.name, observation))

    def observe_facts(self, connection_id: str, facts: Facts) -> None:
        self.log.append((self.name, (connection_id, facts)))

    def forget(self, connection_id: str) -> None:
        self.log.append((self.name, f"forget {connection_id}"))


class Writer(Recorder):
    """An asynchronous consumer, as a writer to storage is: it yields to the loop before
    it keeps anything, so one the pipe did not await would be seen late or never."""

    async def observe(self, observation: Observation) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().observe(observation)

    async def observe_facts(self, connection_id: str, facts: Facts) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().observe_facts(connection_id, facts)


def observation(connection_id: str, at_ms: int, *, pushed: bool = False) -> Observation:
    info = parse_info(f"# Server\r\nredis_version:7.2.0\r\nuptime_in_seconds:{at_ms}\r\n")
    return Observation(connection_id, at_ms, info, pushed=pushed)


def acl(at_ms: int) -> AclFacts:
    return AclFacts(at_ms=at_ms, denied=at_ms)


@pytest.fixture
async def ownership() -> AsyncIterator[LeasedOwnership]:
    """The ownership of a replica sharing storage that has not won any lease yet: "c1" is
    polled by the replicas (offered), "pushed" by none."""
    settings = make_settings(STORAGE_TYPE=StorageType.MEMORY)
    db = Database.from_settings(settings)
    leases = LeasedOwnership(LeaseStore(db), ReplicaRegistry(ReplicaStore(db), settings), settings)
    leases.offer(frozenset({"c1"}))
    try:
        yield leases
    finally:
        await db.close()


class TestOrder:
    async def test_each_observation_reaches_every_consumer_in_the_order_listed(self) -> None:
        log: Log = []
        live_state = LiveState()
        first, writer, last = Recorder("first", log), Writer("writer", log), Recorder("last", log)
        pipe = Pipe(
            observation_consumers=(live_state, first, writer, last),
            facts_consumers=(),
            judged=lambda o: log.append(("judged", o)),
        )
        one, two = observation("c1", 1), observation("c1", 2)
        await pipe.observe(one)
        await pipe.observe(two)
        assert log == [
            ("first", one),
            ("writer", one),
            ("last", one),
            ("judged", one),
            ("first", two),
            ("writer", two),
            ("last", two),
            ("judged", two),
        ]
        assert live_state.latest("c1") is two

    async def test_each_fact_reaches_every_facts_consumer_in_the_order_listed(self) -> None:
        log: Log = []
        live_state = LiveState()
        observing = Recorder("observing", log)
        first, writer, last = Recorder("first", log), Writer("writer", log), Recorder("last", log)
        pipe = Pipe(
            observation_consumers=(observing,),
            facts_consumers=(live_state, first, writer, last),
        )
        one, two = acl(1), acl(2)
        await pipe.put_facts("c1", one)
        await pipe.put_facts("c1", two)
        assert log == [
            ("first", ("c1", one)),
            ("writer", ("c1", one)),
            ("last", ("c1", one)),
            ("first", ("c1", two)),
            ("writer", ("c1", two)),
            ("last", ("c1", two)),
        ]
        assert live_state.facts("c1", AclFacts) is two


class TestFencing:
    async def test_what_a_poll_of_a_connection_not_held_brings_back_goes_no_further(
        self, ownership: LeasedOwnership
    ) -> None:
        log: Log = []
        live_state = LiveState()
        recorder = Recorder("consumer", log)
        pipe = Pipe(
            observation_consumers=(live_state, recorder),
            facts_consumers=(live_state, recorder),
            fenced=ownership.fenced,
            judged=lambda o: log.append(("judged", o)),
        )
        await pipe.observe(observation("c1", 1))
        await pipe.put_facts("c1", acl(1))
        assert log == []
        assert live_state.latest("c1") is None
        assert live_state.facts("c1", AclFacts) is None

    async def test_a_pushed_observation_is_never_fenced(self, ownership: LeasedOwnership) -> None:
        log: Log = []
        recorder = Recorder("consumer", log)
        pipe = Pipe(
            observation_consumers=(recorder,),
            facts_consumers=(recorder,),
            fenced=ownership.fenced,
        )
        # Under the id of a connection this replica does not hold: pushed, it still passes.
        held_elsewhere, pushed = observation("c1", 1, pushed=True), observation("pushed", 1)
        await pipe.observe(held_elsewhere)
        await pipe.observe(pushed)
        await pipe.put_facts("pushed", acl(1))  # not polled by anyone: not fenced
        assert log == [
            ("consumer", held_elsewhere),
            ("consumer", pushed),
            ("consumer", ("pushed", acl(1))),
        ]

    async def test_a_forgotten_connection_is_not_fenced_its_consumers_start_over(
        self,
    ) -> None:
        log: Log = []
        live_state = LiveState()
        recorder = Recorder("consumer", log)
        pipe = Pipe(observation_consumers=(live_state, recorder), facts_consumers=(live_state,))
        one, two = observation("c1", 1), observation("c1", 2)
        await pipe.observe(one)
        await pipe.put_facts("c1", acl(1))
        pipe.forget("c1")
        assert live_state.latest("c1") is None
        assert live_state.facts("c1", AclFacts) is None
        await pipe.observe(two)
        assert log == [("consumer", one), ("consumer", "forget c1"), ("consumer", two)]
        assert live_state.latest("c1") is two
        assert live_state.previous("c1") is None  # no CPU rate across the forget


class TestForget:
    def test_forget_reaches_each_consumer_once_per_call_whatever_lists_it_is_in(self) -> None:
        log: Log = []
        both, observing, facts = Recorder("both", log), Recorder("obs", log), Recorder("facts", log)
        pipe = Pipe(
            observation_consumers=(both, observing, both),
            facts_consumers=(facts, both),
        )
        assert pipe.consumers == (both, observing, facts)
        pipe.forget("c1")
        assert log == [("both", "forget c1"), ("obs", "forget c1"), ("facts", "forget c1")]
        # The pipe keeps no record of what it has forgotten: called again, each consumer
        # is told once more.
        pipe.forget("c1")
        assert log == 2 * [("both", "forget c1"), ("obs", "forget c1"), ("facts", "forget c1")]
