"""SshForward through a real OpenSSH server to a real Valkey
(docs/features/connections.md#ssh-tunnels)."""

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from valkey import exceptions as vx

from svc_monitor.engine.client import EngineClient, EngineTarget
from svc_monitor.engine.errors import (
    EngineError,
    EngineTlsError,
    SshAuthFailed,
    SshHostKeyMismatch,
    SshKeyError,
    SshTimeout,
    SshTunnelError,
    SshUnreachable,
    translate,
)
from svc_monitor.engine.ssh_spec import TunnelSpec, normalize_fingerprint
from svc_monitor.engine.ssh_tunnel import SshForward
from tests.fixtures.servers import RunningServer
from tests.fixtures.sshd import KEY_PASSPHRASE, RunningSshd
from tests.fixtures.waiting import eventually

CONNECT_TIMEOUT_S = 10.0  # PAM delays a refused password by about 2 s
WRONG_PASSWORD = "wrong-ssh-pw-T5cH-not-for-messages"
WRONG_PASSPHRASE = "wrong-passphrase-Z2qL-not-for-messages"
SRC = Path(__file__).resolve().parents[2] / "src"

MakeForward = Callable[..., SshForward]


def spec_for(sshd: RunningSshd, valkey: RunningServer, **changes: Any) -> TunnelSpec:
    fields: dict[str, Any] = {
        "host": sshd.host,
        "port": sshd.port,
        "username": sshd.username,
        "target_host": valkey.host,
        "target_port": valkey.port,
        "auth": "password",
        "password": sshd.password,
    }
    fields.update(changes)
    return TunnelSpec(**fields)


def assert_no_secret(error: EngineError, *secrets: str) -> None:
    for text in (error.message, str(error), repr(error)):
        for secret in (*secrets, KEY_PASSPHRASE, WRONG_PASSWORD, WRONG_PASSPHRASE):
            assert secret not in text


async def info_through(forward: SshForward) -> bytes:
    """INFO server from the Valkey behind the tunnel, by an EngineClient dialing the forward."""
    host, port = await forward.address()
    client = EngineClient(
        EngineTarget(host=host, port=port), connect_timeout_s=2.0, command_timeout_s=2.0
    )
    try:
        await client.ping()
        return await client.info_raw("server")
    finally:
        await client.close()


async def assert_reaches(forward: SshForward, valkey: RunningServer) -> None:
    assert f"tcp_port:{valkey.port}\r\n".encode() in await info_through(forward)


def count(sshd: RunningSshd, text: str) -> int:
    return sshd.log().count(text)


class Pins:
    """An on_pin callback that records what it was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, fingerprint: str) -> None:
        self.seen.append(fingerprint)


@pytest.fixture
async def forwards() -> AsyncIterator[MakeForward]:
    """Build SshForwards; every one is closed after the test."""
    made: list[SshForward] = []

    def make(spec: TunnelSpec, **kwargs: Any) -> SshForward:
        kwargs.setdefault("connect_timeout_s", CONNECT_TIMEOUT_S)
        forward = SshForward(spec, **kwargs)
        made.append(forward)
        return forward

    yield make
    for forward in made:
        await forward.close()


class TestAuthentication:
    async def test_password_login_reaches_valkey(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server))
        await assert_reaches(forward, valkey_server)
        assert count(sshd, "Accepted password for") == 1

    async def test_keyboard_interactive_login_reaches_valkey(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server, auth="keyboard-interactive"))
        await assert_reaches(forward, valkey_server)
        assert count(sshd, "Accepted keyboard-interactive/pam for") == 1

    async def test_inline_key_reaches_valkey(self, sshd, sshd_factory, valkey_server, forwards):
        key = sshd_factory.client_keys.private_key
        spec = spec_for(sshd, valkey_server, auth="privateKey", password=None, private_key=key)
        await assert_reaches(forwards(spec), valkey_server)
        assert count(sshd, "Accepted publickey for") == 1

    async def test_key_file_reaches_valkey(self, sshd, sshd_factory, valkey_server, forwards):
        path = str(sshd_factory.client_keys.private_key_path)
        spec = spec_for(
            sshd, valkey_server, auth="privateKey", password=None, private_key_file=path
        )
        await assert_reaches(forwards(spec), valkey_server)

    @pytest.mark.parametrize("form", ["openssh", "pkcs8-pem"])
    async def test_passphrase_protected_key_reaches_valkey(
        self, sshd, sshd_factory, valkey_server, forwards, form
    ):
        keys = sshd_factory.client_keys
        text = keys.encrypted_private_key if form == "openssh" else keys.encrypted_pem_private_key
        spec = spec_for(
            sshd,
            valkey_server,
            auth="privateKey",
            password=None,
            private_key=text,
            passphrase=keys.passphrase,
        )
        await assert_reaches(forwards(spec), valkey_server)

    @pytest.mark.parametrize("auth", ["password", "keyboard-interactive"])
    async def test_wrong_password_is_refused(self, sshd, valkey_server, forwards, auth):
        forward = forwards(spec_for(sshd, valkey_server, auth=auth, password=WRONG_PASSWORD))
        with pytest.raises(SshAuthFailed) as caught:
            await forward.address()
        assert sshd.host in caught.value.message
        assert str(sshd.port) in caught.value.message
        assert sshd.username in caught.value.message
        assert_no_secret(caught.value, sshd.password)
        assert caught.value.kind == "ssh_auth"

    async def test_unknown_key_is_refused(self, sshd, valkey_server, forwards):
        stranger = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
        spec = spec_for(sshd, valkey_server, auth="privateKey", password=None, private_key=stranger)
        with pytest.raises(SshAuthFailed):
            await forwards(spec).address()

    async def test_wrong_passphrase_is_a_key_error_without_secrets(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        text = sshd_factory.client_keys.encrypted_pem_private_key
        spec = spec_for(
            sshd,
            valkey_server,
            auth="privateKey",
            password=None,
            private_key=text,
            passphrase=WRONG_PASSPHRASE,
        )
        with pytest.raises(SshKeyError, match="does not decrypt") as caught:
            await forwards(spec).address()
        assert_no_secret(caught.value, *text.splitlines()[1:-1])
        assert caught.value.__cause__ is None
        assert caught.value.__context__ is None
        assert count(sshd, "Connection from") == 0  # nothing sent before the key was ready

    async def test_missing_passphrase_is_named(self, sshd, sshd_factory, valkey_server, forwards):
        text = sshd_factory.client_keys.encrypted_pem_private_key
        spec = spec_for(sshd, valkey_server, auth="privateKey", password=None, private_key=text)
        with pytest.raises(SshKeyError, match="no passphrase was given"):
            await forwards(spec).address()

    async def test_malformed_key_is_not_quoted(self, sshd, valkey_server, forwards):
        garbage = "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END"
        spec = spec_for(sshd, valkey_server, auth="privateKey", password=None, private_key=garbage)
        with pytest.raises(SshKeyError, match="not a private key") as caught:
            await forwards(spec).address()
        assert_no_secret(caught.value, "c2VjcmV0LWtleS1ieXRlcw")

    async def test_unreadable_key_file_is_named(self, sshd, valkey_server, forwards, tmp_path):
        path = str(tmp_path / "absent_key")
        spec = spec_for(
            sshd, valkey_server, auth="privateKey", password=None, private_key_file=path
        )
        with pytest.raises(SshKeyError, match="cannot be read") as caught:
            await forwards(spec).address()
        assert path in caught.value.message
        assert sshd.host in caught.value.message

    async def test_huge_key_file_is_refused_unread(self, sshd, valkey_server, forwards, tmp_path):
        path = tmp_path / "huge_key"
        path.write_bytes(b"A" * (1024 * 1024))
        spec = spec_for(
            sshd, valkey_server, auth="privateKey", password=None, private_key_file=str(path)
        )
        with pytest.raises(SshKeyError, match="larger than"):
            await forwards(spec).address()


class TestHostKeyPinning:
    async def test_first_connect_pins_the_presented_key(self, sshd, valkey_server, forwards):
        pins = Pins()
        forward = forwards(spec_for(sshd, valkey_server), on_pin=pins)
        assert forward.pinned_fingerprint is None
        await assert_reaches(forward, valkey_server)
        assert pins.seen == [sshd.host_key_fingerprint]
        assert forward.pinned_fingerprint == sshd.host_key_fingerprint

    async def test_changed_host_key_is_refused_after_pinning(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        pins = Pins()
        forward = forwards(spec_for(sshd, valkey_server), on_pin=pins)
        await forward.address()
        changed = sshd_factory.start_again(sshd, host_key="b")
        await eventually(_down(forward))
        with pytest.raises(SshHostKeyMismatch) as caught:
            await forward.address()
        error = caught.value
        assert error.expected == sshd.host_key_fingerprint
        assert error.presented == changed.host_key_fingerprint != sshd.host_key_fingerprint
        assert error.expected in error.message
        assert error.presented in error.message
        assert f"{sshd.host}:{sshd.port}" in error.message
        assert pins.seen == [sshd.host_key_fingerprint]  # never re-pinned
        assert_refused_before_login(changed)

    async def test_switch_to_another_key_algorithm_is_refused(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        # Checklist E03: the pinned Ed25519 bastion now offers only an RSA key.
        forward = forwards(spec_for(sshd, valkey_server))
        await forward.address()
        changed = sshd_factory.start_again(sshd, host_key="rsa")
        await eventually(_down(forward))
        with pytest.raises(SshHostKeyMismatch) as caught:
            await forward.address()
        assert caught.value.presented == changed.host_key_fingerprint
        assert_refused_before_login(changed)

    async def test_wrong_fingerprint_given_up_front_is_refused_before_login(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        other = sshd_factory.host_key_fingerprint("b")
        pins = Pins()
        spec = spec_for(sshd, valkey_server, password=WRONG_PASSWORD, host_key_fingerprint=other)
        forward = forwards(spec, on_pin=pins)
        # A wrong password too: SshAuthFailed here would mean a login was tried.
        with pytest.raises(SshHostKeyMismatch) as caught:
            await forward.address()
        assert caught.value.presented == sshd.host_key_fingerprint
        assert caught.value.expected == other
        assert pins.seen == []
        assert_refused_before_login(sshd)

    async def test_matching_fingerprint_given_up_front_connects(
        self, sshd, valkey_server, forwards
    ):
        pins = Pins()
        pin = sshd.host_key_fingerprint.removeprefix("SHA256:") + "="  # as some tools print it
        forward = forwards(spec_for(sshd, valkey_server, host_key_fingerprint=pin), on_pin=pins)
        await assert_reaches(forward, valkey_server)
        assert pins.seen == []

    async def test_pin_is_enforced_even_when_storing_it_failed(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        calls: list[str] = []

        async def failing_store(fingerprint: str) -> None:
            calls.append(fingerprint)
            raise RuntimeError("storage is down")

        forward = forwards(spec_for(sshd, valkey_server), on_pin=failing_store)
        await assert_reaches(forward, valkey_server)
        sshd_factory.start_again(sshd, host_key="b")
        await eventually(_down(forward))
        with pytest.raises(SshHostKeyMismatch):
            await forward.address()
        assert calls == [sshd.host_key_fingerprint]


class TestLifecycle:
    async def test_concurrent_callers_share_one_connection(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server))
        addresses = await asyncio.gather(*(forward.address() for _ in range(8)))
        assert len(set(addresses)) == 1
        assert addresses[0][0] == "127.0.0.1"
        assert count(sshd, "Connection from") == 1

    async def test_concurrent_callers_share_one_failure(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server, password=WRONG_PASSWORD))
        results = await asyncio.gather(
            *(forward.address() for _ in range(4)), return_exceptions=True
        )
        assert all(isinstance(r, SshAuthFailed) for r in results)
        assert count(sshd, "Connection from") == 1

    async def test_forward_fails_while_sshd_is_down_and_recovers(
        self, sshd, sshd_factory, valkey_server, forwards
    ):
        forward = forwards(spec_for(sshd, valkey_server), connect_timeout_s=3.0)
        await assert_reaches(forward, valkey_server)
        old = await forward.address()
        sshd_factory.stop(sshd)
        await eventually(_down(forward))
        assert not _accepts(old)  # the old local port is closed with the connection
        with pytest.raises(SshUnreachable, match=f"{sshd.host}:{sshd.port}"):
            await forward.address()
        with pytest.raises(EngineError):
            await info_through(forward)
        sshd_factory.start_again(sshd)
        await assert_reaches(forward, valkey_server)
        assert forward.is_up

    async def test_close_stops_everything(self, sshd, valkey_server, forwards):
        before = asyncio.all_tasks()
        forward = forwards(spec_for(sshd, valkey_server))
        await assert_reaches(forward, valkey_server)
        local = await forward.address()
        await forward.close()
        assert not forward.is_up
        assert not _accepts(local)
        with pytest.raises(SshTunnelError, match="closed"):
            await forward.address()

        async def no_new_tasks() -> bool:
            return not (asyncio.all_tasks() - before)

        await eventually(no_new_tasks, within=5.0)
        await forward.close()  # twice is harmless

    async def test_unreachable_bastion_is_named(self, valkey_server, forwards):
        port = _free_port()
        spec = TunnelSpec(
            host="127.0.0.1",
            port=port,
            username="nobody",
            target_host=valkey_server.host,
            target_port=valkey_server.port,
            auth="password",
            password=WRONG_PASSWORD,
        )
        with pytest.raises(SshUnreachable, match=f"127.0.0.1:{port}") as caught:
            await forwards(spec).address()
        assert caught.value.kind == "ssh_unreachable"
        assert_no_secret(caught.value)

    async def test_silent_bastion_times_out(self, valkey_server, forwards):
        # The kernel completes the TCP handshake into the backlog; no banner ever comes.
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen(1)
            port = silent.getsockname()[1]
            spec = TunnelSpec(
                host="127.0.0.1",
                port=port,
                username="nobody",
                target_host=valkey_server.host,
                target_port=valkey_server.port,
                auth="password",
                password=WRONG_PASSWORD,
            )
            before = asyncio.all_tasks()
            started = time.monotonic()
            with pytest.raises(SshTimeout, match=r"0\.5 s"):
                await forwards(spec, connect_timeout_s=0.5).address()
            assert time.monotonic() - started < 2.0

            async def no_new_tasks() -> bool:
                return not (asyncio.all_tasks() - before)

            await eventually(no_new_tasks, within=5.0)  # the abandoned handshake is gone


class TestAsEngineDialer:
    """SshForward as the `via` of an EngineTarget (engine/dial.py): the client dials the
    forward, and TLS checks the target's own host name."""

    @staticmethod
    async def ping(target: EngineTarget) -> None:
        client = EngineClient(target, connect_timeout_s=CONNECT_TIMEOUT_S, command_timeout_s=2.0)
        try:
            await client.ping()
        finally:
            await client.close()

    async def test_client_dials_the_forward_not_the_host(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server))
        # Unresolvable on purpose: only the bastion knows where the instance is.
        await self.ping(EngineTarget(host="db.invalid", port=valkey_server.port, via=forward))
        assert forward.is_up

    async def test_tls_is_verified_against_the_real_host_name(
        self, sshd, fresh, tls_files, forwards
    ):
        server = fresh("redis7", tls=True)
        forward = forwards(spec_for(sshd, server))
        ca = str(tls_files.ca_path)
        # The certificate names localhost and 127.0.0.1; the dialed address is 127.0.0.1 too,
        # so only a check against the target's own name refuses db.invalid.
        await self.ping(
            EngineTarget(host="localhost", port=server.port, tls=True, tls_ca_file=ca, via=forward)
        )
        wrong = EngineTarget(
            host="db.invalid", port=server.port, tls=True, tls_ca_file=ca, via=forward
        )
        with pytest.raises(EngineTlsError):
            await self.ping(wrong)

    async def test_tunnel_errors_reach_the_caller_as_they_are(self, sshd, valkey_server, forwards):
        forward = forwards(spec_for(sshd, valkey_server, password=WRONG_PASSWORD))
        target = EngineTarget(host=valkey_server.host, port=valkey_server.port, via=forward)
        with pytest.raises(SshAuthFailed):
            await self.ping(target)


class TestTunnelSpec:
    def test_repr_hides_secrets(self, sshd, valkey_server):
        spec = spec_for(sshd, valkey_server, passphrase=WRONG_PASSPHRASE)
        assert sshd.password not in repr(spec)
        assert WRONG_PASSPHRASE not in repr(spec)

    @pytest.mark.parametrize(
        "given",
        [
            "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
            "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
            " sha256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU ",
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
        ],
    )
    def test_fingerprint_forms_normalize(self, given):
        expected = "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"
        assert normalize_fingerprint(given) == expected

    @pytest.mark.parametrize(
        "given", ["", "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48", "SHA256:short"]
    )
    def test_malformed_fingerprint_is_refused(self, sshd, valkey_server, given):
        with pytest.raises(ValueError, match="SHA256"):
            spec_for(sshd, valkey_server, host_key_fingerprint=given)

    def test_key_auth_needs_exactly_one_key(self, sshd, valkey_server):
        with pytest.raises(ValueError, match="either a key or a key file"):
            spec_for(sshd, valkey_server, auth="privateKey", password=None)

    def test_key_file_must_be_absolute(self, sshd, valkey_server):
        with pytest.raises(ValueError, match="absolute"):
            spec_for(
                sshd, valkey_server, auth="privateKey", password=None, private_key_file="id_rsa"
            )


class TestErrorTranslation:
    def test_a_tunnel_error_wrapped_by_valkey_py_keeps_its_kind(self):
        tunnel = SshAuthFailed("SSH bastion 10.0.0.5:22 refused password login for user 'x'")
        # As valkey-py's connect step wraps what a dialer raises.
        wrapped = vx.ConnectionError(str(tunnel))
        wrapped.__cause__ = tunnel
        assert translate(wrapped, address="127.0.0.1:6379", timeout_s=1.0) is tunnel

    def test_no_code_disables_host_key_checking(self):
        # Checklist E04: known_hosts=None turns asyncssh's host key validation off.
        offenders = [
            str(path)
            for path in SRC.rglob("*.py")
            if "known_hosts=None" in path.read_text().replace(" ", "")
        ]
        assert offenders == []


def _down(forward: SshForward) -> Callable[[], Any]:
    async def check() -> bool:
        return not forward.is_up

    return check


def assert_refused_before_login(sshd: RunningSshd) -> None:
    log = sshd.log()
    for step in ("Accepted ", "Failed ", "Postponed ", "Invalid user"):
        assert step not in log, log


def _accepts(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=1.0):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
