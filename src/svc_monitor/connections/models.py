"""Connections as the service holds them in memory (secrets opened, never printed)."""

from dataclasses import dataclass, field
from typing import Literal

from svc_monitor.engine.capabilities import (
    Capabilities,
    EngineIdentity,
    Feature,
    unavailable_reason,
)
from svc_monitor.engine.errors import EngineError, PushStale
from svc_monitor.engine.ssh_spec import SshAuth
from svc_monitor.errors import NotSupported

DbType = Literal["auto", "valkey", "redis"]
# How we learn about an instance: we poll it, a Collector pushes its metrics (OTLP), or we
# poll it through an agent that dialled us (docs/features/agent.md).
Source = Literal["poll", "push", "agent"]
# Agent connections have no address of their own: "agent-<first 8 of the id>" and port 0
# stand for "reached through its agent's link" wherever a host:port is shown. Unique, so
# the `connection` label of two agent connections never collides; port 0 makes the OTLP
# export put their points on the svc-monitor resource (docs/features/agent.md).
AGENT_HOST_PREFIX = "agent-"

# The connection created from DB_* on the first start keeps one id for life, so
# scripts and stored history can name it across restarts of a memory-backed service.
ENV_DEFAULT_ID = "env-default"


@dataclass(frozen=True, slots=True)
class SshTunnel:
    """A single hop through a bastion (connections/tunnels.py; engine/ssh_tunnel.py)."""

    host: str
    port: int = 22
    username: str = "root"
    # None: implied by the secrets stored (`method`), as before the field existed.
    auth_method: SshAuth | None = None
    password: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    passphrase: str | None = field(default=None, repr=False)
    private_key_path: str | None = None
    host_key_fingerprint: str | None = None

    @property
    def method(self) -> SshAuth:
        """The stored method, or the one its secrets imply."""
        if self.auth_method is not None:
            return self.auth_method
        if self.private_key is not None or self.private_key_path is not None:
            return "privateKey"
        return "password"


@dataclass(frozen=True, slots=True)
class Connection:
    """A monitored instance and how to reach it."""

    id: str
    name: str
    host: str
    port: int
    username: str
    password: str | None = field(repr=False)
    tls: bool
    db: int
    db_type: DbType
    ssh_tunnel: SshTunnel | None
    is_default: bool
    created_at: int  # epoch ms
    updated_at: int  # epoch ms
    # A stored secret that would not open: the connection is listed but cannot connect.
    secret_error: str | None = None
    # Which secrets those were ("password", "sshTunnel", "tlsKey"): an edit must send them again,
    # or saving would overwrite what is stored with nothing.
    unreadable: frozenset[str] = frozenset()
    source: Source = "poll"
    # TLS material (used only with `tls`): PEM text; the key is a secret like the password.
    tls_ca_cert: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = field(default=None, repr=False)
    tls_insecure: bool = False

    @property
    def pushed(self) -> bool:
        return self.source == "push"

    @property
    def via_agent(self) -> bool:
        return self.source == "agent"


def forced_engine(db_type: DbType) -> Literal["valkey", "redis"] | None:
    """The engine type a connection forces, or None to detect it."""
    if db_type == "valkey":
        return "valkey"
    if db_type == "redis":
        return "redis"
    return None


@dataclass(frozen=True, slots=True)
class EngineSnapshot:
    """One check of one engine: identity when it answered, the error when it did not."""

    connected: bool
    identity: EngineIdentity | None
    error: EngineError | None
    checked_at_ms: int


@dataclass(frozen=True, slots=True)
class PushStatus:
    """What the OTLP receiver knows of a push connection (memory only: a restart starts
    every push connection disconnected until its next push)."""

    connected: bool
    since_ms: int
    last_push_ms: int | None = None
    engine: Literal["valkey", "redis"] = "redis"
    version: str | None = None
    version_attribute: str = "redis.version"
    role: str | None = None

    def snapshot(self) -> EngineSnapshot:
        if not self.connected:
            why = (
                "no push received since svc-monitor started"
                if self.last_push_ms is None
                else "every pushed field is stale (OTEL_METRICS_STALE_AFTER_MS)"
            )
            return EngineSnapshot(False, None, PushStale(why), self.since_ms)
        identity = EngineIdentity(
            type=self.engine,
            version=self.version,  # None until pushed: unknown, not 0.0.0
            capabilities=Capabilities(),  # nothing live: no command reaches a pushed instance
            cluster_enabled=False,
            role=self.role,
        )
        return EngineSnapshot(True, identity, None, self.last_push_ms or self.since_ms)


@dataclass(frozen=True, slots=True)
class TestOutcome:
    identity: EngineIdentity | None
    error: EngineError | None
    latency_ms: float
    hint: str | None = None  # what the error usually means (connections/hints.py)
    ssh_host_key: str | None = None  # the bastion's key fingerprint, through a tunnel


class CommandUnavailable(NotSupported):
    """A command this connection's engine lacks: renamed, disabled, or denied to its user.

    Found once per connection by engine/capabilities.py (again after a reconnect); a route
    that needs the command asks first and answers with the 501 a panel shows as its
    explanation, instead of sending the command again and passing the refusal on."""


def require_feature(identity: EngineIdentity | None, feature: Feature) -> None:
    """CommandUnavailable when detection found `feature` missing; nothing while unknown."""
    if identity is not None and not identity.capabilities.has(feature):
        raise CommandUnavailable(unavailable_reason(identity.capabilities, feature))
