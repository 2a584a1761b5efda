"""SSH tunnels of polled connections: the API's sshTunnel checked and merged into what is
stored, turned into the engine's TunnelSpec, and one SshForward kept per connection.

Rules (docs/features/connections.md#ssh-tunnels):
- authMethod is password, keyboard-interactive or privateKey; left out, it is privateKey
  when a key or key path is given and password otherwise (connections stored before the
  field existed read the same way). Each method needs its secret: a password, or exactly
  one of an inline key and a key file.
- A key file is a path relative to SVC_SSH_KEY_DIR; an absolute path or one that leaves the
  directory (`../`, a link out of it) is refused, and so is any path while the variable is
  unset.
- Secrets left out of an edit keep their stored values (while the bastion host stays the
  same); "" clears one. A new inline key replaces a stored key path and the other way round.
- The pin: a fingerprint given is enforced; none means the first key seen is trusted and
  stored (ConnectionService.remember_pin); repin clears it.

`Tunnels` keeps one SshForward per connection while its settings stay the same. The pin is
left out of that comparison: storing the first key seen must not tear down the tunnel that
just pinned it (every poller still holds the Connection read before the pin). A changed pin
(an edit, a repin) drops the forward explicitly instead (`drop`).
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from svc_monitor.connections.models import Connection, SshTunnel
from svc_monitor.connections.schemas import SshTunnelIn
from svc_monitor.connections.tls_fields import given_or
from svc_monitor.engine.dial import Dialer
from svc_monitor.engine.errors import SshTunnelError
from svc_monitor.engine.ssh_spec import TunnelSpec
from svc_monitor.errors import Unprocessable

if TYPE_CHECKING:  # asyncssh (and cryptography) cost 27 MB: loaded by the first tunnel
    from svc_monitor.engine.ssh_tunnel import SshForward

logger = logging.getLogger(__name__)

FIELD = "sshTunnel"
PinStore = Callable[[str, str], Awaitable[None]]  # (connection id, fingerprint)


def merge_tunnel(
    body: SshTunnelIn | None, *, base: SshTunnel | None, key_dir: Path | None
) -> SshTunnel | None:
    """The tunnel to store from a create or edit body (None: no tunnel); Unprocessable
    naming the field when it cannot work."""
    if body is None:
        return None
    if body.private_key is not None and body.private_key_path is not None:
        raise Unprocessable(
            f"{FIELD}.privateKey: give privateKey or privateKeyPath, not both",
            field=f"{FIELD}.privateKey",
        )
    if body.private_key_path is not None:
        key_file(body.private_key_path, key_dir)
    keep = base if base is not None and base.host == body.host else None
    stored_key = keep.private_key if keep is not None and body.private_key_path is None else None
    tunnel = SshTunnel(
        host=body.host,
        port=body.port,
        username=body.username,
        auth_method=body.auth_method,
        password=given_or(body.password, keep.password if keep else None),
        private_key=given_or(body.private_key, stored_key),
        passphrase=given_or(body.passphrase, keep.passphrase if keep else None),
        private_key_path=body.private_key_path,
        host_key_fingerprint=body.host_key_fingerprint,
    )
    method = tunnel.method
    if method == "privateKey" and tunnel.private_key is None and tunnel.private_key_path is None:
        raise Unprocessable(
            f"{FIELD}.privateKey: key authentication needs privateKey or privateKeyPath",
            field=f"{FIELD}.privateKey",
        )
    if method != "privateKey" and tunnel.password is None:
        raise Unprocessable(
            f"{FIELD}.password: {method} authentication needs a password",
            field=f"{FIELD}.password",
        )
    return tunnel


def key_file(relative: str, key_dir: Path | None) -> Path:
    """The absolute path of a key file inside SVC_SSH_KEY_DIR; Unprocessable otherwise."""
    field = f"{FIELD}.privateKeyPath"
    if key_dir is None:
        raise Unprocessable(
            f"{field}: key files are disabled: SVC_SSH_KEY_DIR is not set", field=field
        )
    root = key_dir.expanduser().resolve()
    candidate = (root / Path(relative)).resolve()
    if Path(relative).is_absolute() or not candidate.is_relative_to(root):
        raise Unprocessable(f"{field}: must be a path inside SVC_SSH_KEY_DIR", field=field)
    return candidate


def tunnel_spec(
    tunnel: SshTunnel, *, target_host: str, target_port: int, key_dir: Path | None
) -> TunnelSpec:
    """The engine's view of a stored tunnel to the instance at target_host:target_port."""
    method = tunnel.method
    private_key_file = None
    if method == "privateKey" and tunnel.private_key is None and tunnel.private_key_path:
        private_key_file = str(key_file(tunnel.private_key_path, key_dir))
    return TunnelSpec(
        host=tunnel.host,
        port=tunnel.port,
        username=tunnel.username,
        target_host=target_host,
        target_port=target_port,
        auth=method,
        password=tunnel.password if method != "privateKey" else None,
        private_key=tunnel.private_key if method == "privateKey" else None,
        private_key_file=private_key_file,
        passphrase=tunnel.passphrase if method == "privateKey" else None,
        host_key_fingerprint=tunnel.host_key_fingerprint,
    )


@dataclass(slots=True)
class _Kept:
    key: tuple[SshTunnel, str, int]  # the settings (pin left out) and the instance
    forward: "SshForward"


class Tunnels:
    """One SshForward per connection with a tunnel (module docstring)."""

    def __init__(self, *, connect_timeout_s: float, key_dir: Path | None) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._key_dir = key_dir
        self._kept: dict[str, _Kept] = {}
        # Forwards replaced by new settings, closed once the clients using them are
        # (retire): closed first, a forward can leave its accepted sockets unclosed.
        self._retired: dict[str, list[SshForward]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        # Set by ConnectionService: stores the first key a connection's bastion showed.
        self.on_pin: PinStore | None = None

    def dialer(self, connection: Connection) -> Dialer | None:
        """The connection's forward (made on first use, remade when its settings change);
        None without a tunnel. Opening it waits for the first address() call. A stored
        tunnel that cannot work (its secrets unreadable with this ENCRYPTION_KEY, its key
        file no longer allowed) fails there, as a connection error, not here."""
        tunnel = connection.ssh_tunnel
        if tunnel is None:
            self._set_aside(connection.id)
            return None
        key = (replace(tunnel, host_key_fingerprint=None), connection.host, connection.port)
        kept = self._kept.get(connection.id)
        if kept is not None and kept.key == key:
            return kept.forward
        self._set_aside(connection.id)
        if "sshTunnel" in connection.unreadable:
            return _Refused(
                f"SSH tunnel via {tunnel.host}:{tunnel.port}: its stored secrets cannot be "
                f"decrypted ({connection.secret_error}); enter them again"
            )
        try:
            forward = self.forward(
                connection.host, connection.port, tunnel, connection_id=connection.id
            )
        except (Unprocessable, ValueError) as exc:
            return _Refused(f"SSH tunnel via {tunnel.host}:{tunnel.port}: {exc}")
        self._kept[connection.id] = _Kept(key, forward)
        return forward

    def forward(
        self, host: str, port: int, tunnel: SshTunnel, *, connection_id: str | None = None
    ) -> "SshForward":
        """A new forward to host:port; with a connection id, a first key seen is stored for
        it. The caller of a forward made for a test closes it."""
        from svc_monitor.engine.ssh_tunnel import SshForward

        spec = tunnel_spec(tunnel, target_host=host, target_port=port, key_dir=self._key_dir)
        on_pin = None
        if connection_id is not None and self.on_pin is not None:
            on_pin = partial(self.on_pin, connection_id)
        return SshForward(spec, connect_timeout_s=self._connect_timeout_s, on_pin=on_pin)

    async def drop(self, connection_id: str) -> None:
        """Close the connection's forward: the next use opens a new one (a changed pin)."""
        kept = self._kept.pop(connection_id, None)
        forwards = self._retired.pop(connection_id, [])
        if kept is not None:
            forwards.append(kept.forward)
        await asyncio.gather(*(f.close() for f in forwards), return_exceptions=True)

    def retire(self, connection_id: str, *, after: "asyncio.Task[None] | None") -> None:
        """Close the forwards the connection's new settings replaced, once `after` (the
        closing of the client that used them) is done; in the background."""
        retired = self._retired.pop(connection_id, [])
        if not retired:
            return

        async def close_after() -> None:
            if after is not None:
                await asyncio.gather(after, return_exceptions=True)
            await asyncio.gather(*(f.close() for f in retired), return_exceptions=True)

        # The set keeps the task alive until it is done.
        task = asyncio.get_running_loop().create_task(close_after())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        """Close every forward; the engine clients are closed first (LiveConnections)."""
        forwards = [kept.forward for kept in self._kept.values()]
        forwards += [f for retired in self._retired.values() for f in retired]
        self._kept.clear()
        self._retired.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)
        await asyncio.gather(*(f.close() for f in forwards), return_exceptions=True)

    def _set_aside(self, connection_id: str) -> None:
        kept = self._kept.pop(connection_id, None)
        if kept is not None:
            self._retired.setdefault(connection_id, []).append(kept.forward)


class _Refused:
    """A tunnel that cannot be opened: every dial fails with why."""

    def __init__(self, message: str) -> None:
        self.message = message

    async def address(self) -> tuple[str, int]:
        raise SshTunnelError(self.message)
