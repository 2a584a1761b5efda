"""An SSH local port forward through one bastion to one instance, (re)opened on demand.

`SshForward` is an engine/dial.py `Dialer`: the engine client asks `address()` before it
opens a connection and dials 127.0.0.1 on the forwarded port, while TLS still verifies the
database's real host name, since the forward carries bytes, not names. Only the configured
instance is forwarded: cluster and sentinel peers are reached directly
(docs/features/connections.md#ssh-tunnels).

Host keys are checked during key exchange, before any credential is sent
(docs/features/connections.md#ssh-tunnels). asyncssh asks
`SSHClient.validate_host_public_key` only for keys its known_hosts does not already trust,
and skips it altogether when known_hosts is None; so known_hosts is an empty list of
trusted keys (never None, which would trust every key) and the pin decides. Nothing is
read from ~/.ssh (config, known_hosts, agent, default keys): the service account's files
must not change what a connection trusts or offers.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import asyncssh
from asyncssh.public_key import get_default_public_key_algs

from svc_monitor.engine.errors import (
    SshAuthFailed,
    SshHostKeyMismatch,
    SshTimeout,
    SshTunnelError,
    SshUnreachable,
)
from svc_monitor.engine.ssh_keys import load_client_key
from svc_monitor.engine.ssh_spec import TunnelSpec

logger = logging.getLogger(__name__)

PinCallback = Callable[[str], Awaitable[None]]

LOCAL_HOST = "127.0.0.1"
# A bastion that stops answering without closing (a partition) is noticed after
# KEEPALIVE_S * KEEPALIVE_COUNT seconds; a closed connection is noticed at once.
KEEPALIVE_S = 15.0
KEEPALIVE_COUNT = 3
# Rounds of keyboard-interactive prompts answered with the password before giving up, so
# a server that keeps asking (say, for a one-time code) fails the login instead of looping.
MAX_KBDINT_ROUNDS = 3

_AUTH_METHOD: dict[str, str] = {
    "password": "password",
    "keyboard-interactive": "keyboard-interactive",
    "privateKey": "publickey",
}
# Plain host key algorithms only: a host certificate would be checked against CA keys
# (we trust none) instead of the pin.
_HOST_KEY_ALGS = [alg.decode() for alg in get_default_public_key_algs()]
_NOTHING_TRUSTED: tuple[tuple[()], tuple[()], tuple[()]] = ((), (), ())


class _TunnelClient(asyncssh.SSHClient):
    """asyncssh's per-connection callbacks: the pin check, the kbd-int answers, the drop."""

    def __init__(
        self,
        *,
        expected: str | None,
        password: str | None,
        on_lost: Callable[["_TunnelClient", Exception | None], None],
    ) -> None:
        self.expected = expected
        self.presented: str | None = None
        self._password = password
        self._on_lost = on_lost
        self._kbdint_started = False
        self._rounds = 0

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        self.presented = key.get_fingerprint("sha256")
        return self.expected is None or self.presented == self.expected

    def kbdint_auth_requested(self) -> str | None:
        # Once per connection, as asyncssh does for its own password answer: a refused
        # password is not retried (each refusal costs a PAM delay of about 2 s).
        if self._password is None or self._kbdint_started:
            return None
        self._kbdint_started = True
        return ""  # the server picks the submethod

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> list[str] | None:
        if not prompts:
            return []  # an instructions-only round
        self._rounds += 1
        if self._password is None or self._rounds > MAX_KBDINT_ROUNDS:
            return None
        return [self._password] * len(prompts)

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(self, exc)


class SshForward:
    """A local port forward through one bastion to one instance, kept up on demand.

    `address()` opens the SSH connection and the forward when they are absent or dropped;
    concurrent callers share one attempt and its outcome, so a pool of connections dialing
    at once opens one SSH connection (and a failing bastion sees one attempt, not one per
    caller). With no fingerprint given, the first key seen is trusted, enforced from then on,
    and handed to `on_pin` so the caller can store it.
    """

    def __init__(
        self,
        spec: TunnelSpec,
        *,
        connect_timeout_s: float,
        on_pin: PinCallback | None = None,
        keepalive_s: float = KEEPALIVE_S,
    ) -> None:
        self.spec = spec
        self.connect_timeout_s = connect_timeout_s
        self._on_pin = on_pin
        self._keepalive_s = keepalive_s
        self._pin = spec.host_key_fingerprint
        self._pin_unsaved = False
        self._lock = asyncio.Lock()
        self._key: asyncssh.SSHKey | None = None
        self._client: _TunnelClient | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._listener: asyncssh.SSHListener | None = None
        self._local: tuple[str, int] | None = None
        self._finished = 0  # attempts ended, so that callers who waited share the outcome
        self._last_error: SshTunnelError | None = None
        self._closed = False

    @property
    def pinned_fingerprint(self) -> str | None:
        return self._pin

    @property
    def is_up(self) -> bool:
        return self._local is not None and self._conn is not None and not self._conn.is_closed()

    async def address(self) -> tuple[str, int]:
        """("127.0.0.1", forwarded port), opening the tunnel first if it is not up."""
        if self.is_up and self._local is not None:
            return self._local
        finished = self._finished
        async with self._lock:
            self._refuse_if_closed()
            if self.is_up and self._local is not None:
                return self._local
            if self._finished != finished and self._last_error is not None:
                raise self._last_error.with_traceback(None)  # failed while we waited
            try:
                self._local = await self._open()
            except SshTunnelError as exc:
                self._finished += 1
                if self._last_error is None or self._last_error.message != exc.message:
                    logger.warning("SSH tunnel via %s failed: %s", self.spec.bastion, exc.message)
                self._last_error = exc
                raise
            self._finished += 1
            self._last_error = None
            if self._pin_unsaved:
                await self._save_pin()
            return self._local

    async def close(self) -> None:
        """Close the forward and the SSH connection; address() refuses from then on."""
        self._closed = True
        async with self._lock:
            was_up = self._local is not None
            await self._teardown()
        if was_up:
            logger.info("SSH tunnel via %s closed", self.spec.bastion)

    # -- internals ---------------------------------------------------------------------------

    async def _open(self) -> tuple[str, int]:
        key = await self._client_key()
        password = self.spec.password if self.spec.auth != "privateKey" else None
        client = _TunnelClient(expected=self._pin, password=password, on_lost=self._lost)
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                conn = await self._connect(client, key)
                try:
                    listener = await conn.forward_local_port(
                        LOCAL_HOST, 0, self.spec.target_host, self.spec.target_port
                    )
                except BaseException:
                    conn.abort()
                    raise
        except Exception as exc:
            raise self._error(exc, client) from None
        self._client, self._conn, self._listener = client, conn, listener
        local = (LOCAL_HOST, listener.get_port())
        if self._pin is None and client.presented is not None:
            self._pin, self._pin_unsaved = client.presented, True
            logger.info("SSH bastion %s host key pinned: %s", self.spec.bastion, self._pin)
        logger.info(
            "SSH tunnel to %s via %s up on %s:%s",
            self.spec.target,
            self.spec.bastion,
            local[0],
            local[1],
        )
        return local

    async def _connect(
        self, client: _TunnelClient, key: asyncssh.SSHKey | None
    ) -> asyncssh.SSHClientConnection:
        spec = self.spec
        return await asyncssh.connect(
            spec.host,
            spec.port,
            client_factory=lambda: client,
            username=spec.username,
            known_hosts=_NOTHING_TRUSTED,
            server_host_key_algs=_HOST_KEY_ALGS,
            x509_trusted_certs=None,
            config=None,
            agent_path=None,
            gss_host=None,
            host_based_auth=False,
            preferred_auth=_AUTH_METHOD[spec.auth],
            public_key_auth=key is not None,
            client_keys=[key] if key is not None else None,
            password_auth=spec.auth == "password",
            password=spec.password if spec.auth == "password" else None,
            kbdint_auth=spec.auth == "keyboard-interactive",
            keepalive_interval=self._keepalive_s,
            keepalive_count_max=KEEPALIVE_COUNT,
        )

    async def _client_key(self) -> asyncssh.SSHKey | None:
        if self.spec.auth != "privateKey":
            return None
        if self._key is None:  # decrypting can take a second (bcrypt KDF): do it once
            self._key = await load_client_key(
                text=self.spec.private_key,
                path=self.spec.private_key_file,
                passphrase=self.spec.passphrase,
                bastion=self.spec.bastion,
            )
        return self._key

    def _error(self, exc: Exception, client: _TunnelClient) -> SshTunnelError:
        """Our words for a failed attempt: the bastion and the step, never a credential."""
        bastion, spec = self.spec.bastion, self.spec
        if isinstance(exc, asyncssh.HostKeyNotVerifiable) and client.presented is not None:
            expected = client.expected or "?"
            return SshHostKeyMismatch(
                f"SSH bastion {bastion} presented host key {client.presented}, but "
                f"{expected} is pinned; refused before login",
                expected=expected,
                presented=client.presented,
            )
        if isinstance(exc, asyncssh.PermissionDenied):
            return SshAuthFailed(
                f"SSH bastion {bastion} refused {spec.auth} login for user {spec.username!r}"
            )
        if isinstance(exc, TimeoutError):
            return SshTimeout(
                f"SSH bastion {bastion}: no connection, login and forward to {spec.target} "
                f"within {self.connect_timeout_s:g} s"
            )
        if isinstance(exc, asyncssh.Error):
            return SshTunnelError(f"SSH bastion {bastion} ended the connection: {exc.reason}")
        if isinstance(exc, OSError):
            text = exc.strerror or type(exc).__name__
            return SshUnreachable(f"SSH bastion {bastion} unreachable: {text}")
        return SshTunnelError(f"SSH tunnel via {bastion} failed: {type(exc).__name__}")

    def _lost(self, client: _TunnelClient, exc: Exception | None) -> None:
        if client is not self._client:
            return  # an attempt that never became the tunnel
        listener, self._listener = self._listener, None
        self._client = self._conn = self._local = None
        if listener is not None:
            listener.close()
        if not self._closed:
            logger.warning(
                "SSH tunnel via %s is down: %s", self.spec.bastion, exc or "closed by the bastion"
            )

    async def _save_pin(self) -> None:
        if self._on_pin is None or self._pin is None:
            self._pin_unsaved = False
            return
        try:
            await self._on_pin(self._pin)
        except Exception:
            # Enforced in memory all the same; stored again at the next (re)connect.
            logger.exception("storing the SSH host key pin for %s failed", self.spec.bastion)
            return
        self._pin_unsaved = False

    async def _teardown(self) -> None:
        listener, conn = self._listener, self._conn
        self._client = None  # what closing reports back is not a drop
        self._listener = self._conn = self._local = None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                if listener is not None:
                    listener.close()
                    await listener.wait_closed()
                if conn is not None:
                    conn.close()
                    await conn.wait_closed()
        except TimeoutError:
            if conn is not None:
                conn.abort()

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise SshTunnelError(f"the SSH tunnel via {self.spec.bastion} is closed")
