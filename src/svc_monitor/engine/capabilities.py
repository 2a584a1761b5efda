"""Which engine an instance is, its version, and which features it really has.

Capabilities are probed, not only read off the version: a server with a command
renamed away (`rename-command COMMANDLOG ""`) or an ACL user without the right
to run it must report the feature as missing, so the UI hides it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError
from svc_monitor.engine.info import detect_engine, engine_version, parse_version

EngineType = Literal["valkey", "redis"]

# Replies that mean "you cannot use this command here", as opposed to "wrong use of it".
_MISSING_MARKERS = (
    "unknown command",
    "unknown subcommand",
    "noperm",
    "command is not allowed",
    "not supported",
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    has_command_log: bool = False
    has_slot_stats: bool = False
    has_cluster_slot_stats: bool = False
    has_latency_monitor: bool = False
    has_acl_log: bool = False
    has_memory_doctor: bool = False

    def to_api(self) -> dict[str, bool]:
        return {
            "hasCommandLog": self.has_command_log,
            "hasSlotStats": self.has_slot_stats,
            "hasClusterSlotStats": self.has_cluster_slot_stats,
            "hasLatencyMonitor": self.has_latency_monitor,
            "hasAclLog": self.has_acl_log,
            "hasMemoryDoctor": self.has_memory_doctor,
        }


@dataclass(frozen=True, slots=True)
class EngineIdentity:
    """What detection found out about one instance."""

    type: EngineType
    version: str
    capabilities: Capabilities
    cluster_enabled: bool
    role: str | None


async def detect(client: EngineClient, *, forced_type: EngineType | None = None) -> EngineIdentity:
    """Read INFO, then probe each feature in one round trip. Raises EngineError."""
    # Plain INFO (the default sections hold server, replication and cluster): Redis < 7.0
    # answers INFO with several section names by "ERR syntax error", which would make every
    # Redis 6.2 undetectable. Detection runs once per up transition, so the size is no matter.
    info = await client.info()
    engine = forced_type or detect_engine(info)
    # Forced to redis, a Valkey is judged by the Redis version it claims to be compatible with.
    claimed = info.get_str("server", "redis_version") if forced_type == "redis" else None
    version = claimed or engine_version(info) or "0.0.0"
    at_least = _version_gate(parse_version(version))

    probes: dict[str, list[Any]] = {
        "latency": ["LATENCY", "LATEST"],
        "acl_log": ["ACL", "LOG", "0"],
    }
    if engine == "valkey" or at_least(4, 0):
        probes["memory_doctor"] = ["MEMORY", "DOCTOR"]
    if engine == "valkey" and at_least(8, 1):
        probes["command_log"] = ["COMMANDLOG", "LEN", "slow"]
    if engine == "valkey" and at_least(8, 0):
        probes["slot_stats"] = ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "0"]
    replies = dict(zip(probes, await client.try_each(list(probes.values())), strict=True))

    slot_stats = _usable(replies.get("slot_stats"))
    return EngineIdentity(
        type=engine,
        version=version,
        capabilities=Capabilities(
            has_command_log=_usable(replies.get("command_log")),
            has_slot_stats=slot_stats,
            has_cluster_slot_stats=slot_stats,
            has_latency_monitor=_usable(replies.get("latency")),
            has_acl_log=_usable(replies.get("acl_log")),
            has_memory_doctor=_usable(replies.get("memory_doctor")),
        ),
        cluster_enabled=info.get_int("cluster", "cluster_enabled") == 1,
        role=info.get_str("replication", "role"),
    )


def _usable(reply: Any) -> bool:
    """A probe reply says the feature is there unless it is an error about the command itself."""
    if reply is None:
        return False  # not probed: the version rules it out
    if isinstance(reply, EngineError):
        # "ERR This instance has cluster support disabled" still proves SLOT-STATS exists.
        return not any(marker in reply.message.lower() for marker in _MISSING_MARKERS)
    return True


def _version_gate(version: tuple[int, int, int]) -> Callable[[int, int], bool]:
    def at_least(major: int, minor: int) -> bool:
        return version[:2] >= (major, minor)

    return at_least
