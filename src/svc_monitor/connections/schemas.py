"""Request and response bodies of the connections API (camelCase on the wire)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel

from svc_monitor.connections.addresses import (
    is_plain_host,
    parse_connection_url,
    split_host_port,
)
from svc_monitor.connections.models import DbType, Source

Name = Annotated[str, Field(min_length=1, max_length=100)]
Host = Annotated[str, Field(min_length=1, max_length=255)]
Port = Annotated[int, Field(ge=1, le=65535)]
# Secrets are taken as typed: a space at either end is part of a password, and an OpenSSH
# key without its final newline is refused by OpenSSH ("invalid format").
_AsTyped = StringConstraints(strip_whitespace=False)
Secret = Annotated[str, _AsTyped, Field(max_length=1024)]
# An OpenSSH or PEM private key is a few KiB; anything far larger is not a key.
PrivateKey = Annotated[str, _AsTyped, Field(min_length=1, max_length=32 * 1024)]


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
        extra="forbid",
    )


class SshTunnelIn(ApiModel):
    """A bastion to reach the instance through (used once tunnels are built)."""

    host: Host
    port: Port = 22
    username: Annotated[str, Field(min_length=1, max_length=255)]
    password: Secret | None = None
    private_key: PrivateKey | None = None
    passphrase: Secret | None = None
    private_key_path: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    host_key_fingerprint: Annotated[str, Field(pattern=r"^SHA256:[A-Za-z0-9+/]{43}=?$")] | None = (
        None
    )


class ConnectionFields(ApiModel):
    """Fields shared by create, update and test. `url` and `host:port` are split here."""

    name: Name | None = None
    host: Host | None = None
    port: Port | None = None
    username: Annotated[str, Field(max_length=255)] | None = None
    password: Secret | None = None
    tls: bool | None = None
    db: Annotated[int, Field(ge=0, le=65535)] | None = None
    db_type: DbType | None = Field(
        default=None, description="auto (default) detects; valkey or redis forces the type"
    )
    ssh_tunnel: SshTunnelIn | None = None
    url: Annotated[str, Field(max_length=2048)] | None = Field(
        default=None,
        description="Quick connect: redis://, rediss://, valkey:// or valkeys:// "
        "URL with user, password and database; fills the fields it names.",
    )

    @field_validator("url")
    @classmethod
    def _url_parses(cls, url: str | None) -> str | None:
        if url is not None:
            parse_connection_url(url)
        return url

    @field_validator("host")
    @classmethod
    def _host_parses(cls, host: str | None) -> str | None:
        if host is not None:
            name, _ = split_host_port(host)
            if not is_plain_host(name):
                raise ValueError("must be a host name or IP address, optionally with :port")
        return host


class ConnectionCreate(ConnectionFields):
    """A new connection: `name` and `host` (or `url`) are required."""

    name: Name | None = Field(default=None, description="Defaults to host:port with a URL")
    set_as_default: bool = False
    source: Source = Field(
        default="poll",
        description="poll (default): svc-monitor connects to the instance. push: an "
        "OpenTelemetry Collector sends its metrics to /v1/external/metrics; give name, host "
        "and port (as the Collector reports them) and no credentials; nothing is dialled.",
    )


class ConnectionUpdate(ConnectionFields):
    """Changes to a connection. An absent field keeps its value; `password: ""` clears it."""


class ConnectionTest(ConnectionFields):
    """A connection to try without saving it."""


class Capabilities(BaseModel):
    hasCommandLog: bool
    hasSlotStats: bool
    hasClusterSlotStats: bool
    hasLatencyMonitor: bool
    hasAclLog: bool
    hasMemoryDoctor: bool


EngineState = Literal["connected", "disconnected", "unknown"]


class EngineStatus(BaseModel):
    """The engine behind a connection, as last seen."""

    status: EngineState
    type: Literal["valkey", "redis"] | None = None
    version: str | None = None
    capabilities: Capabilities | None = None
    error: str | None = None
    errorKind: str | None = None
    checkedAt: int | None = Field(default=None, description="epoch ms of the last check")


class SshTunnelRead(BaseModel):
    host: str
    port: int
    username: str
    privateKeyPath: str | None
    hostKeyFingerprint: str | None
    hasPassword: bool
    hasPrivateKey: bool
    hasPassphrase: bool


class PushedVersion(BaseModel):
    """The engine version a push connection's Collector reports (held in memory)."""

    type: Literal["valkey", "redis"]
    version: str | None = Field(description="null until the attribute arrives")
    attribute: str = Field(description="The resource attribute the version is read from")
    missing: str | None = Field(
        default=None, description="Names the resource attribute to add when no version arrived"
    )


class ConnectionRead(BaseModel):
    """A connection as the API shows it: never a password or key, only whether one is set."""

    id: str
    source: Source = Field(
        description="poll: svc-monitor connects to it; push: its metrics arrive over OTLP, "
        "and engine.status is connected while any pushed field is fresh"
    )
    name: str
    host: str
    port: int
    username: str
    db: int
    tls: bool
    dbType: DbType
    hasPassword: bool
    sshTunnel: SshTunnelRead | None
    isDefault: bool
    createdAt: int
    updatedAt: int
    credentialError: str | None = Field(
        default=None, description="Set when a stored secret cannot be decrypted"
    )
    engine: EngineStatus
    lastPushAt: int | None = Field(
        default=None, description="push connections: epoch ms of the last accepted point"
    )
    pushedVersion: PushedVersion | None = None


class ConnectionTestResult(BaseModel):
    """Outcome of trying a connection; engine errors (WRONGPASS ...) come verbatim."""

    success: bool
    type: Literal["valkey", "redis"] | None = None
    version: str | None = None
    capabilities: Capabilities | None = None
    error: str | None = None
    errorKind: str | None = None
    latencyMs: float | None = None


class DiscoveredRead(BaseModel):
    """An instance pushing metrics over OTLP that no connection is registered for."""

    address: str = Field(description="host:port, as the Collector reports it")
    name: str | None = Field(description="the pusher's service.name, when it sends one")
    host: str
    port: int
    firstSeenAt: int
    lastSeenAt: int
