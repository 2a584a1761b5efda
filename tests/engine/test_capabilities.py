"""Engine detection against real servers: type, version and probed capabilities."""

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

from svc_monitor.engine.capabilities import (
    Capabilities,
    EngineIdentity,
    EngineType,
    detect,
    unavailable_reason,
)
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
    "hasConfig": True,
    "hasSlowLog": True,
    "hasMonitor": True,
    "hasVectorSearch": False,  # no search engine loaded
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
def valkey_managed_like(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """CONFIG and SLOWLOG renamed away, as managed providers ship them on some plans."""
    server = server_factory.start("valkey", config={"rename-command": ['CONFIG ""', 'SLOWLOG ""']})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def valkey_without_monitor(server_factory: ServerFactory) -> Iterator[RunningServer]:
    server = server_factory.start("valkey", config={"rename-command": 'MONITOR ""'})
    yield server
    server_factory.stop(server)


@pytest.fixture(scope="module")
def valkey_with_narrow_users(server_factory: ServerFactory) -> Iterator[RunningServer]:
    """Users denied SLOWLOG, only SLOWLOG LEN, MONITOR, and COMMAND (which MONITOR's probe uses)."""
    server = server_factory.start(
        "valkey",
        acl_users=[
            "noslowlog on >pw ~* &* +@all -slowlog",
            "nolen on >pw ~* &* +@all -slowlog|len",
            "nomonitor on >pw ~* &* +@all -monitor",
            "nocommand on >pw ~* &* +@all -command",
        ],
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
        assert (identity.version or "").startswith("9.1.")
        assert identity.capabilities.to_api() == ALL_CAPABILITIES
        assert identity.cluster_enabled is False
        assert identity.role == "master"
        # No search engine is the usual case: not a refused command, and said as such.
        assert identity.capabilities.refusals == ()
        assert (
            "no search engine" in unavailable_reason(identity.capabilities, "vector_search").lower()
        )

    async def test_a_search_engine_gives_vector_search(
        self, detect_on: Detector, search_server: RunningServer
    ) -> None:
        async with detect_on(search_server) as identity:
            pass
        assert identity.capabilities.to_api() == {**ALL_CAPABILITIES, "hasVectorSearch": True}

    async def test_a_user_denied_ft_list_lacks_vector_search_and_is_told_why(
        self, detect_on: Detector, search_server: RunningServer
    ) -> None:
        with search_server.client() as admin:
            admin.execute_command(
                "ACL", "SETUSER", "nosearch", "on", ">nosearch-pw-1", "~*", "+@all", "-ft._list"
            )
        async with detect_on(
            search_server, username="nosearch", password="nosearch-pw-1"
        ) as identity:
            pass
        assert identity.capabilities.has_vector_search is False
        reason = unavailable_reason(identity.capabilities, "vector_search")
        assert "not allowed" in reason
        assert "NOPERM" in reason

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
        assert (identity.version or "").startswith(version_prefix)
        assert identity.capabilities.to_api() == REDIS_CAPABILITIES

    async def test_commandlog_renamed_away_is_reported_missing(
        self, detect_on: Detector, valkey_without_commandlog: RunningServer
    ) -> None:
        async with detect_on(valkey_without_commandlog) as identity:
            pass
        # Same engine and version as a full Valkey 9.1: only the probe can tell.
        assert identity.type == "valkey"
        assert (identity.version or "").startswith("9.1.")
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


class TestMissingCommands:
    async def test_renamed_config_and_slowlog_are_missing_and_the_rest_is_there(
        self, detect_on: Detector, valkey_managed_like: RunningServer
    ) -> None:
        async with detect_on(valkey_managed_like) as identity:
            pass
        assert identity.capabilities.to_api() == {
            **ALL_CAPABILITIES,
            "hasConfig": False,
            "hasSlowLog": False,
        }
        # The server's own words are kept for the explanation, per missing feature only.
        refusals = dict(identity.capabilities.refusals)
        assert set(refusals) == {"config", "slow_log"}
        assert refusals["config"].startswith("unknown command 'CONFIG'")
        assert refusals["slow_log"].startswith("unknown command 'SLOWLOG'")

    async def test_a_user_denied_slowlog_lacks_only_the_slow_log(
        self, detect_on: Detector, valkey_with_narrow_users: RunningServer
    ) -> None:
        async with detect_on(
            valkey_with_narrow_users, username="noslowlog", password="pw"
        ) as identity:
            pass
        assert identity.capabilities.to_api() == {**ALL_CAPABILITIES, "hasSlowLog": False}
        assert (identity.capabilities.refusal("slow_log") or "").startswith("NOPERM")

    async def test_a_user_denied_only_slowlog_len_still_has_the_slow_log(
        self, detect_on: Detector, valkey_with_narrow_users: RunningServer
    ) -> None:
        # The poll reads SLOWLOG GET and does without LEN; the probe asks what it reads.
        async with detect_on(valkey_with_narrow_users, username="nolen", password="pw") as identity:
            pass
        assert identity.capabilities.to_api() == ALL_CAPABILITIES

    async def test_a_renamed_monitor_is_missing(
        self, detect_on: Detector, valkey_without_monitor: RunningServer
    ) -> None:
        async with detect_on(valkey_without_monitor) as identity:
            pass
        assert identity.capabilities.to_api() == {**ALL_CAPABILITIES, "hasMonitor": False}
        assert identity.capabilities.refusals == ()  # COMMAND INFO answers nil, no error

    @pytest.mark.parametrize("username", ["nomonitor", "nocommand"])
    async def test_monitor_listed_or_unknowable_counts_as_there(
        self, detect_on: Detector, valkey_with_narrow_users: RunningServer, username: str
    ) -> None:
        # Denied by ACL it is still listed (the console's preflight tells the refusal), and
        # a refused COMMAND INFO says nothing about MONITOR either way.
        async with detect_on(
            valkey_with_narrow_users, username=username, password="pw"
        ) as identity:
            pass
        assert identity.capabilities.has_monitor is True
        assert identity.capabilities.refusal("monitor") is None

    @pytest.mark.parametrize(
        ("fixture", "version_prefix"),
        [("redis7_server", "7.0."), ("redis6_server", "6.2.")],
        ids=["redis-7.0", "redis-6.2"],
    )
    async def test_plain_redis_has_config_slowlog_and_monitor(
        self,
        request: pytest.FixtureRequest,
        detect_on: Detector,
        fixture: str,
        version_prefix: str,
    ) -> None:
        server: RunningServer = request.getfixturevalue(fixture)
        async with detect_on(server) as identity:
            pass
        assert (identity.version or "").startswith(version_prefix)
        api = identity.capabilities.to_api()
        assert (api["hasConfig"], api["hasSlowLog"], api["hasMonitor"]) == (True, True, True)


class TestUnavailableReason:
    def test_a_renamed_command_names_the_cause_and_quotes_the_server(self) -> None:
        capabilities = Capabilities(refusals=(("slow_log", "unknown command 'SLOWLOG'"),))
        assert unavailable_reason(capabilities, "slow_log") == (
            "SLOWLOG is not available on this server: the command is renamed or disabled "
            "(managed providers disable it on some plans). "
            "The server answered: unknown command 'SLOWLOG'"
        )

    def test_a_denied_command_blames_the_connections_user(self) -> None:
        denied = "NOPERM User w has no permissions to run the 'config|get' command"
        capabilities = Capabilities(refusals=(("config", denied),))
        assert unavailable_reason(capabilities, "config") == (
            "CONFIG is not available on this server: this connection's user is not allowed "
            f"to run it ({denied})"
        )

    def test_a_command_unknown_by_name_has_no_server_words(self) -> None:
        assert unavailable_reason(Capabilities(), "monitor") == (
            "MONITOR is not available on this server: the command is renamed or disabled "
            "(managed providers disable it on some plans)"
        )
