"""Engine detection against real servers: type, version and probed capabilities."""

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

from svc_monitor.engine.capabilities import EngineIdentity, EngineType, detect
from svc_monitor.engine.client import EngineClient, EngineTarget
from tests.fixtures.servers import RunningServer, ServerFactory

LIMITED_USER = "limited"
LIMITED_PASSWORD = "limited-pw-6f1c"

ALL_CAPABILITIES = {
    "hasCommandLog": True,
    "hasSlotStats": True,
    "hasClusterSlotStats": True,
    "hasLatencyMonitor": True,
    "hasAclLog": True,
    "hasMemoryDoctor": True,
}
REDIS_CAPABILITIES = {
    **ALL_CAPABILITIES,
    "hasCommandLog": False,
    "hasSlotStats": False,
    "hasClusterSlotStats": False,
}

Detector = Callable[..., AbstractAsyncContextManager[EngineIdentity]]


@pytest.fixture
def detect_on() -> Detector:
    """`async with detect_on(server) as identity`: detect through a client that is then closed."""

    @asynccontextmanager
    async def run(
        server: RunningServer,
        *,
        username: str | None = None,
        password: str | None = None,
        forced_type: EngineType | None = None,
    ) -> AsyncIterator[EngineIdentity]:
        target = EngineTarget(
            server.host,
            server.port,
            username=username,
            password=password if password is not None else server.password,
        )
        client = EngineClient(target, connect_timeout_s=1.0, command_timeout_s=2.0)
        try:
            yield await detect(client, forced_type=forced_type)
        finally:
            await client.close()

    return run


@pytest.fixture(scope="module")
def valkey_without_commandlog(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", config={"rename-command": 'COMMANDLOG ""'})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def valkey_with_limited_user(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start(
        "valkey", acl_users=[f"{LIMITED_USER} on >{LIMITED_PASSWORD} ~* +@all -latency"]
    )
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def valkey_cluster(server_factory: ServerFactory) -> Iterator[list[RunningServer]]:
    nodes = server_factory.cluster("valkey")
    yield nodes
    for node in reversed(nodes):
        server_factory.stop(node)


@pytest.fixture(scope="module")
def valkey_replica(
    server_factory: ServerFactory, valkey_server: RunningServer
) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", replica_of=valkey_server)
    yield server
    server_factory.stop(server)


class TestDetect:
    async def test_valkey_9_1_has_every_capability(
        self, detect_on: Detector, valkey_server: RunningServer
    ) -> None:
        async with detect_on(valkey_server) as identity:
            pass
        assert identity.type == "valkey"
        assert identity.version.startswith("9.1.")
        assert identity.capabilities.to_api() == ALL_CAPABILITIES
        assert identity.cluster_enabled is False
        assert identity.role == "master"

    @pytest.mark.parametrize(
        ("fixture", "version_prefix"),
        [("redis7_server", "7.0."), ("redis6_server", "6.2.")],
        ids=["redis-7.0", "redis-6.2"],
    )
    async def test_redis_lacks_commandlog_and_slot_stats(
        self,
        request: pytest.FixtureRequest,
        detect_on: Detector,
        fixture: str,
        version_prefix: str,
    ) -> None:
        server: RunningServer = request.getfixturevalue(fixture)
        async with detect_on(server) as identity:
            pass
        assert identity.type == "redis"
        assert identity.version.startswith(version_prefix)
        assert identity.capabilities.to_api() == REDIS_CAPABILITIES

    async def test_commandlog_renamed_away_is_reported_missing(
        self, detect_on: Detector, valkey_without_commandlog: RunningServer
    ) -> None:
        async with detect_on(valkey_without_commandlog) as identity:
            pass
        # Same engine and version as a full Valkey 9.1: only the probe can tell.
        assert identity.type == "valkey"
        assert identity.version.startswith("9.1.")
        assert identity.capabilities.to_api() == {**ALL_CAPABILITIES, "hasCommandLog": False}

    async def test_user_without_latency_rights_lacks_only_latency_monitor(
        self, detect_on: Detector, valkey_with_limited_user: RunningServer
    ) -> None:
        async with detect_on(
            valkey_with_limited_user, username=LIMITED_USER, password=LIMITED_PASSWORD
        ) as identity:
            pass
        assert identity.type == "valkey"
        assert identity.capabilities.to_api() == {**ALL_CAPABILITIES, "hasLatencyMonitor": False}

    async def test_forced_redis_type_wins_over_detection(
        self, detect_on: Detector, valkey_server: RunningServer
    ) -> None:
        async with detect_on(valkey_server, forced_type="redis") as identity:
            pass
        assert identity.type == "redis"
        # Judged as the Redis it claims compatibility with, so Valkey-only features are off.
        assert identity.version == "7.2.4"
        assert identity.capabilities.has_command_log is False

    async def test_cluster_node_reports_cluster_mode_and_slot_stats(
        self, detect_on: Detector, valkey_cluster: list[RunningServer]
    ) -> None:
        async with detect_on(valkey_cluster[0]) as identity:
            pass
        assert identity.cluster_enabled is True
        assert identity.capabilities.has_slot_stats is True
        assert identity.capabilities.has_cluster_slot_stats is True
        assert identity.role == "master"

    async def test_replica_reports_slave_role(
        self, detect_on: Detector, valkey_replica: RunningServer
    ) -> None:
        async with detect_on(valkey_replica) as identity:
            pass
        assert identity.role == "slave"
        assert identity.type == "valkey"
