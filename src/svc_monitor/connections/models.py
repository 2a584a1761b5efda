"""Connections as the service holds them in memory (secrets opened, never printed)."""

from dataclasses import dataclass, field
from typing import Literal

from svc_monitor.engine.ssh_spec import SshAuth

DbType = Literal["auto", "valkey", "redis"]
# How we learn about an instance: we poll it, or a Collector pushes its metrics (OTLP).
Source = Literal["poll", "push"]

# The connection created from DB_* on the first start keeps one id for life, so
# scripts and stored history can name it across restarts of a memory-backed service.
ENV_DEFAULT_ID = "env-default"


@dataclass(frozen=True, slots=True)
class SshTunnel:
    """A single hop through a bastion (connections/tunnels.py; engine/ssh_tunnel.py)."""

    host: str
    port: int = 22
    username: str = "root"
    # None: implied by the secrets stored (tunnels.auth_method), as before the field existed.
    auth_method: SshAuth | None = None
    password: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    passphrase: str | None = field(default=None, repr=False)
    private_key_path: str | None = None
    host_key_fingerprint: str | None = None


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


def forced_engine(db_type: DbType) -> Literal["valkey", "redis"] | None:
    """The engine type a connection forces, or None to detect it."""
    if db_type == "valkey":
        return "valkey"
    if db_type == "redis":
        return "redis"
    return None
