"""Request and response bodies of the connections API (camelCase on the wire)."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator
from pydantic.alias_generators import to_camel

from svc_monitor.connections.models import (
    Connection,
    DbType,
    EngineSnapshot,
    PushStatus,
    Source,
    TestOutcome,
)
from svc_monitor.engine.capabilities import EngineIdentity
from svc_monitor.engine.ssh_spec import SshAuth, normalize_fingerprint
from svc_monitor.kit.addresses import (
    is_plain_host,
    parse_connection_url,
    split_host_port,
)
from svc_monitor.kit.pem import check_certificates, check_private_key, summary
from svc_monitor.kit.plain_text import Printable

Name = Annotated[Printable, Field(min_length=1, max_length=100)]
Host = Annotated[Printable, Field(min_length=1, max_length=255)]
Username = Annotated[Printable, Field(max_length=255)]
Port = Annotated[int, Field(ge=1, le=65535)]
# Secrets are taken as typed: a space at either end is part of a password, and an OpenSSH
# key without its final newline is refused by OpenSSH ("invalid format").
_AsTyped = StringConstraints(strip_whitespace=False)
Secret = Annotated[str, _AsTyped, Field(max_length=1024)]
# An OpenSSH or PEM private key is a few KiB; anything far larger is not a key.
PrivateKey = Annotated[str, _AsTyped, Field(min_length=1, max_length=32 * 1024)]
# A CA bundle may be a provider's whole chain set (Debian's entire trust store is ~220 KB);
# a client certificate with its chain is a few KiB. "" clears a stored value.
CaPem = Annotated[str, Field(max_length=256 * 1024)]
CertPem = Annotated[str, Field(max_length=64 * 1024)]
KeyPem = Annotated[str, Field(max_length=32 * 1024)]

_TLS_INSECURE_TEXT = (
    "DANGER, for labs only: skip verification of the server's certificate and host name. "
    "Traffic is still encrypted, but anyone on the path can pose as the server and read the "
    "password. Logged as a warning once per connection."
)


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
        extra="forbid",
    )


class SshTunnelIn(ApiModel):
    """A bastion (one SSH hop) to reach the instance through: svc-monitor forwards a local
    port on 127.0.0.1 to the instance through it, and TLS still verifies the instance's
    own host name. Only this connection is tunnelled; cluster peers are reached directly.
    Secrets left out of an edit keep their stored values while `host` stays the same; ""
    clears one."""

    host: Host
    port: Port = 22
    username: Annotated[Username, Field(min_length=1)]
    auth_method: SshAuth | None = Field(
        default=None,
        description="password, keyboard-interactive (prompts answered with the password) or "
        "privateKey; left out: privateKey when a key or key path is given, else password",
    )
    password: Secret | None = None
    private_key: PrivateKey | None = Field(
        default=None, description="An OpenSSH or PEM private key (encrypted at rest)"
    )
    passphrase: Secret | None = None
    private_key_path: Annotated[Printable, Field(min_length=1, max_length=1024)] | None = Field(
        default=None,
        description="A key file, relative to SVC_SSH_KEY_DIR; a path leaving it is refused",
    )
    host_key_fingerprint: Annotated[str, Field(max_length=80)] | None = Field(
        default=None,
        description="The bastion's host key, SHA256:... as ssh-keygen -lf prints it; a "
        "different key is refused. Left out: the first key seen is trusted and pinned, and "
        "a later change is refused until an admin re-pins",
    )

    @field_validator("host_key_fingerprint")
    @classmethod
    def _fingerprint_parses(cls, value: str | None) -> str | None:
        return None if value is None or value == "" else normalize_fingerprint(value)


class ConnectionFields(ApiModel):
    """Fields shared by create, update and test. `url` and `host:port` are split here."""

    name: Name | None = None
    host: Host | None = None
    port: Port | None = None
    username: Username | None = None
    password: Secret | None = None
    tls: bool | None = Field(
        default=None,
        description="TLS to the instance, verifying its certificate and host name (see "
        "tlsCaCert, tlsCert, tlsKey, tlsInsecure)",
    )
    db: Annotated[int, Field(ge=0, le=65535)] | None = None
    db_type: DbType | None = Field(
        default=None, description="auto (default) detects; valkey or redis forces the type"
    )
    ssh_tunnel: SshTunnelIn | None = None
    url: Annotated[str, Field(max_length=2048)] | None = Field(
        default=None,
        description="Quick connect: redis://, rediss://, valkey:// or valkeys:// "
        "URL with user, password and database; fills the fields it names. "
        "rediss:// and valkeys:// turn tls on.",
    )
    tls_ca_cert: CaPem | None = Field(
        default=None,
        description="PEM CA certificate(s) to trust for this connection, in addition to the "
        'system trust store and ENGINE_TLS_CA_FILE. Absent keeps the stored value; "" '
        "removes it.",
    )
    tls_cert: CertPem | None = Field(
        default=None,
        description="PEM client certificate (optionally followed by its chain) for mutual "
        'TLS; needs tlsKey. Absent keeps the stored value; "" removes it.',
    )
    tls_key: KeyPem | None = Field(
        default=None,
        description="Unencrypted PEM private key of tlsCert. A secret: encrypted at rest when "
        'ENCRYPTION_KEY is set, never returned or logged. Absent keeps the stored key; "" '
        "removes it.",
    )
    tls_insecure: bool | None = Field(default=None, description=_TLS_INSECURE_TEXT)

    @field_validator("url")
    @classmethod
    def _url_parses(cls, url: str | None) -> str | None:
        if url is not None:
            parse_connection_url(url)
        return url

    @field_validator("tls_ca_cert")
    @classmethod
    def _ca_cert_is_pem(cls, text: str | None) -> str | None:
        return text if not text else check_certificates(text, what="CA certificates")

    @field_validator("tls_cert")
    @classmethod
    def _cert_is_pem(cls, text: str | None) -> str | None:
        return text if not text else check_certificates(text, what="a client certificate")

    @field_validator("tls_key")
    @classmethod
    def _key_is_pem(cls, text: str | None) -> str | None:
        return text if not text else check_private_key(text)

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

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"name": "cache-primary", "host": "10.0.0.12", "port": 6379, "password": "s3cret"},
                {"name": "sessions", "url": "rediss://default:s3cret@sessions.internal:6380/0"},
            ]
        }
    )

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

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "cache-primary-eu", "port": 6380}]}
    )


class ConnectionTest(ConnectionFields):
    """A connection to try without saving it."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"host": "10.0.0.12", "port": 6379, "password": "s3cret"}]}
    )


class Capabilities(BaseModel):
    """What the engine really lets this connection run, probed once per connection (again
    after a reconnect). False means the panels explain the gap instead of showing data."""

    hasCommandLog: bool
    hasSlotStats: bool
    hasClusterSlotStats: bool
    hasLatencyMonitor: bool
    hasAclLog: bool
    hasMemoryDoctor: bool
    hasConfig: bool = Field(
        description="CONFIG GET answers (managed providers often rename or disable CONFIG)"
    )
    hasSlowLog: bool = Field(description="SLOWLOG answers: the slow log is polled and shown")
    hasMonitor: bool = Field(
        description="the server knows MONITOR (COMMAND INFO); a provider may still refuse it, "
        "which the MONITOR console's preflight reports"
    )


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
    """A connection's bastion; its secrets only as has* flags."""

    host: str
    port: int
    username: str
    authMethod: SshAuth
    privateKeyPath: str | None
    hostKeyFingerprint: str | None = Field(
        description="The pinned host key: given, or the first one seen (null until then)"
    )
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

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "7f3c2a9e",
                    "source": "poll",
                    "name": "cache-primary",
                    "host": "10.0.0.12",
                    "port": 6379,
                    "username": "default",
                    "db": 0,
                    "tls": False,
                    "hasTlsCaCert": False,
                    "hasTlsCert": False,
                    "hasTlsKey": False,
                    "tlsInsecure": False,
                    "dbType": "auto",
                    "hasPassword": True,
                    "sshTunnel": None,
                    "isDefault": True,
                    "createdAt": 1795942051139,
                    "updatedAt": 1795942051139,
                    "engine": {
                        "status": "connected",
                        "type": "valkey",
                        "version": "9.0.1",
                        "checkedAt": 1795942051935,
                    },
                }
            ]
        }
    )

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
    hasTlsCaCert: bool = Field(description="A CA certificate of this connection's own is set")
    hasTlsCert: bool = Field(description="A client certificate (mutual TLS) is set")
    hasTlsKey: bool = Field(description="The client certificate's private key is set")
    tlsInsecure: bool = Field(description=_TLS_INSECURE_TEXT)
    tlsCertSubject: str | None = Field(
        default=None, description="Subject of the client certificate (RFC 4514)"
    )
    tlsCertExpiresAt: int | None = Field(
        default=None, description="epoch ms at which the client certificate expires"
    )
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
    hint: str | None = Field(
        default=None,
        description="What the failure usually means and what to change (wrong port, TLS "
        "missing or mismatched, certificate not trusted, wrong token ...)",
    )
    latencyMs: float | None = None
    sshHostKeyFingerprint: str | None = Field(
        default=None,
        description="Through an SSH tunnel: the bastion's host key as seen by this test "
        "(saving the connection pins it unless hostKeyFingerprint says otherwise)",
    )


class DiscoveredRead(BaseModel):
    """An instance pushing metrics over OTLP that no connection is registered for."""

    address: str = Field(description="host:port, as the Collector reports it")
    name: str | None = Field(description="the pusher's service.name, when it sends one")
    host: str
    port: int
    firstSeenAt: int
    lastSeenAt: int


# --- models to what the routes answer: the one place that decides what of a connection
# is shown ---


def to_read(
    connection: Connection, seen: EngineSnapshot | None, push: PushStatus | None = None
) -> ConnectionRead:
    tunnel = connection.ssh_tunnel
    if connection.pushed and seen is None:  # registered a moment ago: nothing pushed yet
        seen = PushStatus(False, connection.updated_at).snapshot()
    client_cert = summary(connection.tls_cert) if connection.tls_cert else None
    return ConnectionRead(
        id=connection.id,
        source=connection.source,
        name=connection.name,
        host=connection.host,
        port=connection.port,
        username=connection.username,
        db=connection.db,
        tls=connection.tls,
        hasTlsCaCert=connection.tls_ca_cert is not None,
        hasTlsCert=connection.tls_cert is not None,
        hasTlsKey=connection.tls_key is not None or "tlsKey" in connection.unreadable,
        tlsInsecure=connection.tls_insecure,
        tlsCertSubject=client_cert.subject if client_cert else None,
        tlsCertExpiresAt=client_cert.not_after_ms if client_cert else None,
        dbType=connection.db_type,
        hasPassword=connection.password is not None or connection.secret_error is not None,
        sshTunnel=None
        if tunnel is None
        else SshTunnelRead(
            host=tunnel.host,
            port=tunnel.port,
            username=tunnel.username,
            authMethod=tunnel.method,
            privateKeyPath=tunnel.private_key_path,
            hostKeyFingerprint=tunnel.host_key_fingerprint,
            hasPassword=tunnel.password is not None,
            hasPrivateKey=tunnel.private_key is not None,
            hasPassphrase=tunnel.passphrase is not None,
        ),
        isDefault=connection.is_default,
        createdAt=connection.created_at,
        updatedAt=connection.updated_at,
        credentialError=connection.secret_error,
        engine=to_engine_status(seen),
        lastPushAt=push.last_push_ms if push else None,
        pushedVersion=_pushed_version(push) if push and push.last_push_ms else None,
    )


def _pushed_version(push: PushStatus) -> PushedVersion:
    return PushedVersion(
        type=push.engine,
        version=push.version,
        attribute=push.version_attribute,
        missing=None if push.version else push.version_attribute,
    )


def to_engine_status(seen: EngineSnapshot | None) -> EngineStatus:
    if seen is None:
        return EngineStatus(status="unknown")
    if not seen.connected:
        assert seen.error is not None
        return EngineStatus(
            status="disconnected",
            error=seen.error.message,
            errorKind=seen.error.kind,
            checkedAt=seen.checked_at_ms,
        )
    identity = seen.identity
    assert identity is not None
    return EngineStatus(
        status="connected",
        checkedAt=seen.checked_at_ms,
        type=identity.type,
        version=identity.version,
        capabilities=_capabilities(identity),
    )


def to_test_result(outcome: TestOutcome) -> ConnectionTestResult:
    if outcome.error is not None:
        return ConnectionTestResult(
            success=False,
            error=outcome.error.message,
            errorKind=outcome.error.kind,
            hint=outcome.hint,
            latencyMs=outcome.latency_ms,
            sshHostKeyFingerprint=outcome.ssh_host_key,
        )
    identity = outcome.identity
    assert identity is not None
    return ConnectionTestResult(
        success=True,
        latencyMs=outcome.latency_ms,
        sshHostKeyFingerprint=outcome.ssh_host_key,
        type=identity.type,
        version=identity.version,
        capabilities=_capabilities(identity),
    )


def _capabilities(identity: EngineIdentity) -> Capabilities:
    return Capabilities(**identity.capabilities.to_api())
