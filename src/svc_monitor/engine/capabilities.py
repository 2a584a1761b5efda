"""Which engine an instance is, its version, and which features it really has.

Capabilities are probed, not only read off the version: a server with a command
renamed away (`rename-command COMMANDLOG ""`), disabled by a managed provider, or
denied to an ACL user must report the feature as missing, so the UI explains it and
no poll asks for it again. Every probe rides the one pipelined round trip `detect`
makes once per up transition of a connection, so a reconnect probes afresh.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from svc_monitor.engine.client import EngineClient
from svc_monitor.engine.errors import EngineError, EngineResponseError
from svc_monitor.engine.info import detect_engine, engine_version, parse_version

logger = logging.getLogger(__name__)

EngineType = Literal["valkey", "redis"]
# The probed features a missing command can take away, named as in detect's probes.
Feature = Literal[
    "config",
    "slow_log",
    "acl_log",
    "command_log",
    "monitor",
    "latency",
    "memory_doctor",
    "slot_stats",
    "vector_search",
]

# Replies that mean "you cannot use this command here", as opposed to "wrong use of it" or
# a passing state (-LOADING, -BUSY). Renamed away: "unknown command" (ElastiCache,
# Memorystore, Azure and rename-command all answer so). ACL: "NOPERM". Managed providers'
# own refusals: "command is not allowed", "... not supported", "... is disabled", "... not
# available". Not a bare "disabled": "cluster support disabled" proves SLOT-STATS exists.
_MISSING_MARKERS = (
    "unknown command",
    "unknown subcommand",
    "noperm",
    "not allowed",
    "not supported",
    "unsupported command",
    "command is disabled",
    "command disabled",
    "not available",
)
# The command each feature needs, as people type it.
COMMANDS: dict[Feature, str] = {
    "config": "CONFIG",
    "slow_log": "SLOWLOG",
    "acl_log": "ACL LOG",
    "command_log": "COMMANDLOG",
    "monitor": "MONITOR",
    "latency": "LATENCY",
    "memory_doctor": "MEMORY DOCTOR",
    "slot_stats": "CLUSTER SLOT-STATS",
    "vector_search": "FT._LIST",
}

_FLAGS: dict[Feature, str] = {
    "config": "has_config",
    "slow_log": "has_slow_log",
    "acl_log": "has_acl_log",
    "command_log": "has_command_log",
    "monitor": "has_monitor",
    "latency": "has_latency_monitor",
    "memory_doctor": "has_memory_doctor",
    "slot_stats": "has_slot_stats",
    "vector_search": "has_vector_search",
}


@dataclass(frozen=True, slots=True)
class Capabilities:
    """Which features one engine really has, as detection probed them."""

    has_command_log: bool = False
    has_slot_stats: bool = False
    has_cluster_slot_stats: bool = False
    has_latency_monitor: bool = False
    has_acl_log: bool = False
    has_memory_doctor: bool = False
    has_config: bool = False
    has_slow_log: bool = False
    has_monitor: bool = False
    # A search engine answers FT._LIST: the RediSearch module, Valkey Search or Redis 8's
    # built-in search (docs/features/vector-search.md).
    has_vector_search: bool = False
    # (feature, the server's words) for each probe the server refused: what the panels and
    # the 501s quote. Not part of the API shape, which is booleans only.
    refusals: tuple[tuple[Feature, str], ...] = field(default=(), compare=False)

    def to_api(self) -> dict[str, bool]:
        return {
            "hasCommandLog": self.has_command_log,
            "hasSlotStats": self.has_slot_stats,
            "hasClusterSlotStats": self.has_cluster_slot_stats,
            "hasLatencyMonitor": self.has_latency_monitor,
            "hasAclLog": self.has_acl_log,
            "hasMemoryDoctor": self.has_memory_doctor,
            "hasConfig": self.has_config,
            "hasSlowLog": self.has_slow_log,
            "hasMonitor": self.has_monitor,
            "hasVectorSearch": self.has_vector_search,
        }

    def has(self, feature: Feature) -> bool:
        return bool(getattr(self, _FLAGS[feature]))

    def refusal(self, feature: Feature) -> str | None:
        """The server's answer to the probe of `feature`, when it refused it."""
        return next((text for name, text in self.refusals if name == feature), None)


@dataclass(frozen=True, slots=True)
class EngineIdentity:
    """What detection found out about one instance."""

    type: EngineType
    # None: not known. Detection always finds one (a server without a version string gates
    # as 0.0.0); a push connection has none until the Collector sends a version attribute.
    version: str | None
    capabilities: Capabilities
    cluster_enabled: bool
    role: str | None

    def release(self) -> tuple[int, int, int]:
        """(major, minor, patch) for feature gates; an unknown version opens none of them."""
        return parse_version(self.version or "0.0.0")

    def has_latency_histogram(self) -> bool:
        """LATENCY HISTOGRAM came with Redis 7.0; every Valkey has it."""
        return self.type == "valkey" or self.release()[:2] >= (7, 0)


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

    probes: dict[Feature, list[Any]] = {
        "latency": ["LATENCY", "LATEST"],
        "acl_log": ["ACL", "LOG", "0"],
        # One small parameter every version has: CONFIG GET * would copy the whole config.
        "config": ["CONFIG", "GET", "maxmemory"],
        # GET, which the slow log poll and page live on, and not LEN: a user denied only
        # slowlog|len still has a slow log (the poll then does without its length).
        "slow_log": ["SLOWLOG", "GET", "0"],
        # MONITOR cannot be tried on a shared connection (it never returns to request mode);
        # COMMAND INFO answers nil for a command renamed away. A provider that lists it and
        # refuses it anyway is caught by the MONITOR console's own preflight.
        "monitor": ["COMMAND", "INFO", "MONITOR"],
        # Answered by every search engine (the names of its indexes), refused as an unknown
        # command where none is loaded.
        "vector_search": ["FT._LIST"],
    }
    if engine == "valkey" or at_least(4, 0):
        probes["memory_doctor"] = ["MEMORY", "DOCTOR"]
    if engine == "valkey" and at_least(8, 1):
        probes["command_log"] = ["COMMANDLOG", "LEN", "slow"]
    if engine == "valkey" and at_least(8, 0):
        probes["slot_stats"] = ["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "0"]
    replies = dict(zip(probes, await client.try_each(list(probes.values())), strict=True))

    slot_stats = _usable(replies.get("slot_stats"))
    capabilities = Capabilities(
        has_command_log=_usable(replies.get("command_log")),
        has_slot_stats=slot_stats,
        has_cluster_slot_stats=slot_stats,
        has_latency_monitor=_usable(replies.get("latency")),
        has_acl_log=_usable(replies.get("acl_log")),
        has_memory_doctor=_usable(replies.get("memory_doctor")),
        has_config=_usable(replies.get("config")),
        has_slow_log=_usable(replies.get("slow_log")),
        has_monitor=_listed(replies.get("monitor")),
        has_vector_search=_usable(replies.get("vector_search")),
        # COMMAND INFO refused says nothing of MONITOR, so it is nobody's refusal.
        refusals=tuple(
            (name, reply.message)
            for name, reply in replies.items()
            if name != "monitor" and _refused(reply) and not _no_search_engine(name, reply)
        ),
    )
    _log_missing(client.target.address, capabilities)
    return EngineIdentity(
        type=engine,
        version=version,
        capabilities=capabilities,
        cluster_enabled=info.get_int("cluster", "cluster_enabled") == 1,
        role=info.get_str("replication", "role"),
    )


def _log_missing(address: str, capabilities: Capabilities) -> None:
    # Once per detection (an up transition), at info: what an operator of a managed instance
    # expects to read once, and never again as a poll failure.
    missing = [COMMANDS[name] for name, _ in capabilities.refusals]
    if not capabilities.has_monitor:
        missing.append(COMMANDS["monitor"])
    if missing:
        logger.info(
            "%s: %s not available (renamed, disabled or denied): not asked for again, "
            "the pages explain it", address, ", ".join(missing),
        )  # fmt: skip


def is_refusal(error: EngineError) -> bool:
    """Whether an error reply means the command is not for us here (renamed, disabled by the
    provider, denied by ACL), as opposed to a passing failure worth retrying."""
    if not isinstance(error, EngineResponseError):
        return False  # no answer at all proves nothing about the command
    message = error.message.lower()
    return any(marker in message for marker in _MISSING_MARKERS)


def unavailable_reason(capabilities: Capabilities, feature: Feature) -> str:
    """Why `feature` is missing, for people: which command, what usually causes it, and the
    server's own words when its probe was refused."""
    command = COMMANDS[feature]
    if feature == "vector_search" and capabilities.refusal(feature) is None:
        return (
            "No search engine answers on this server: FT._LIST is unknown, so neither the "
            "RediSearch module, Valkey Search nor Redis 8's built-in search is loaded"
        )
    refusal = capabilities.refusal(feature)
    if refusal is not None and refusal.upper().startswith("NOPERM"):
        return (
            f"{command} is not available on this server: this connection's user is not "
            f"allowed to run it ({refusal})"
        )
    reason = (
        f"{command} is not available on this server: the command is renamed or disabled "
        "(managed providers disable it on some plans)"
    )
    return f"{reason}. The server answered: {refusal}" if refusal else reason


def _no_search_engine(name: Feature, reply: EngineError) -> bool:
    """FT._LIST unknown: no search engine is loaded, which most servers are (not a command
    someone took away, so neither logged nor quoted as a refusal). Denied stays a refusal."""
    return name == "vector_search" and not reply.message.upper().startswith("NOPERM")


def _refused(reply: Any) -> bool:
    return isinstance(reply, EngineError) and is_refusal(reply)


def _usable(reply: Any) -> bool:
    """A probe reply says the feature is there unless it is an error about the command itself."""
    if reply is None:
        return False  # not probed: the version rules it out
    # "ERR This instance has cluster support disabled" still proves SLOT-STATS exists, and a
    # passing failure (-LOADING) is no proof of absence: the feature stays on.
    return not _refused(reply)


def _listed(reply: Any) -> bool:
    """COMMAND INFO's answer: a nil entry for a command the server does not know by that name.
    COMMAND itself refused (or renamed) tells nothing about MONITOR: it stays on."""
    if isinstance(reply, list):
        return bool(reply) and reply[0] is not None
    return True


def _version_gate(version: tuple[int, int, int]) -> Callable[[int, int], bool]:
    def at_least(major: int, minor: int) -> bool:
        return version[:2] >= (major, minor)

    return at_least
