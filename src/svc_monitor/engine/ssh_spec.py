"""What an SSH tunnel is made of: the bastion, the login, the pin, the instance behind it.

Apart from engine/ssh_tunnel.py so that connections/ can validate a fingerprint or build a
spec without importing asyncssh.
"""

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

SshAuth = Literal["password", "keyboard-interactive", "privateKey"]

_FINGERPRINT = re.compile(r"[A-Za-z0-9+/]{43}")


def normalize_fingerprint(text: str) -> str:
    """`SHA256:` and 43 base64 characters, as OpenSSH prints it; ValueError otherwise."""
    value = text.strip()
    if value[:7].upper() == "SHA256:":
        value = value[7:]
    value = value.rstrip("=")  # some tools print the base64 padding
    if not _FINGERPRINT.fullmatch(value):
        raise ValueError("a host key fingerprint is SHA256: followed by 43 base64 characters")
    return f"SHA256:{value}"


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class TunnelSpec:
    """One SSH hop: the bastion, how to log in there, the pin, and the instance behind it.

    `private_key_file` is an absolute path the caller has already confined to
    SVC_SSH_KEY_DIR; `private_key` is the key's text (OpenSSH or PEM).
    """

    host: str
    port: int
    username: str
    target_host: str
    target_port: int
    auth: SshAuth
    password: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    private_key_file: str | None = None
    passphrase: str | None = field(default=None, repr=False)
    host_key_fingerprint: str | None = None

    def __post_init__(self) -> None:
        if self.auth not in get_args(SshAuth):
            raise ValueError(f"unknown SSH auth method {self.auth!r}")
        if self.auth != "privateKey" and self.password is None:
            raise ValueError(f"SSH {self.auth} authentication needs a password")
        if self.auth == "privateKey" and (self.private_key is None) == (
            self.private_key_file is None
        ):
            raise ValueError("SSH key authentication needs either a key or a key file")
        if self.private_key_file is not None and not self.private_key_file.startswith("/"):
            raise ValueError("the SSH key file must be an absolute path")
        for port in (self.port, self.target_port):
            if not 0 < port < 65536:
                raise ValueError(f"port {port} is out of range")
        if self.host_key_fingerprint is not None:
            pin = normalize_fingerprint(self.host_key_fingerprint)
            object.__setattr__(self, "host_key_fingerprint", pin)

    @property
    def bastion(self) -> str:
        return _address(self.host, self.port)

    @property
    def target(self) -> str:
        return _address(self.target_host, self.target_port)
