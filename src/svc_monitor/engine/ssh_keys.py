"""Reading the client's private key for an SSH tunnel, with errors that never quote it.

asyncssh's own messages do not carry key material, but they are replaced all the same (and
their chain dropped): a key or passphrase must not reach a log or a response even if a
future release starts echoing input.
"""

from pathlib import Path

import asyncssh

from svc_monitor.engine.errors import SshKeyError
from svc_monitor.kit.gil_handover import to_thread

# A PEM RSA-16384 key is about 12 KiB; anything far larger is not a key, and is refused.
MAX_KEY_BYTES = 64 * 1024


async def load_client_key(
    *, text: str | None, path: str | None, passphrase: str | None, bastion: str
) -> asyncssh.SSHKey:
    """The key from `text`, else from the file at `path`, decrypted with `passphrase`.

    Runs on a thread: an OpenSSH key's bcrypt KDF costs about 1.5 s at ssh-keygen's
    default 16 rounds (measured here), which must not stall the event loop.
    """
    if text is not None:
        data = text.encode()
    elif path is not None:
        data = await to_thread(_read_key_file, Path(path), bastion)
    else:
        raise SshKeyError(f"no private key configured for SSH bastion {bastion}")
    return await to_thread(_import_key, data, passphrase, bastion)


def _read_key_file(path: Path, bastion: str) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SshKeyError(
            f"the private key file {path} for SSH bastion {bastion} cannot be read: {reason}"
        ) from None
    if len(data) > MAX_KEY_BYTES:
        raise SshKeyError(
            f"the private key file {path} for SSH bastion {bastion} is larger than "
            f"{MAX_KEY_BYTES // 1024} KiB: not a private key"
        )
    return data


def _import_key(data: bytes, passphrase: str | None, bastion: str) -> asyncssh.SSHKey:
    if len(data) > MAX_KEY_BYTES:
        raise SshKeyError(
            f"the private key for SSH bastion {bastion} is larger than "
            f"{MAX_KEY_BYTES // 1024} KiB: not a private key"
        )
    try:
        return asyncssh.import_private_key(data, passphrase)
    except asyncssh.KeyEncryptionError:
        problem = "does not decrypt with the passphrase given"
    except asyncssh.KeyImportError as exc:
        if passphrase is None and "Passphrase must be specified" in str(exc):
            problem = "is encrypted, and no passphrase was given"
        elif passphrase is not None and "decrypt" in str(exc):
            problem = "does not decrypt with the passphrase given"
        else:
            problem = "is not a private key in OpenSSH, PEM or PKCS#8 form"
    except Exception:  # a parser error on malformed input: same answer, nothing quoted
        problem = "is not a private key in OpenSSH, PEM or PKCS#8 form"
    raise SshKeyError(f"the private key for SSH bastion {bastion} {problem}")
