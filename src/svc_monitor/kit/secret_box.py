"""Secrets at rest: AES-256-GCM envelope encryption under a key derived from ENCRYPTION_KEY.

Each secret gets its own random data key; the data key is wrapped by the key
encryption key (KEK), which scrypt derives from ENCRYPTION_KEY and
ENCRYPTION_KEK_SALT. The `context` (table, row id, column) is authenticated data
on both layers, so a sealed value copied into another row does not open.

Stored forms:
    v1:<base64url(wrap_nonce | wrapped_key | nonce | ciphertext+tag)>
    plain:<value>          when ENCRYPTION_KEY is not set (one warning at startup)
"""

import base64
import os
from typing import TYPE_CHECKING

from pydantic import SecretStr

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_SEALED = "v1:"
_PLAIN = "plain:"
_NONCE = 12
_WRAPPED_KEY = 32 + 16  # a 256-bit key plus its GCM tag
# n=2**14, r=8 costs ~16 MiB and ~40 ms once at startup; the key is a passphrase, so a
# memory-hard KDF is what stands between a stolen database and the secrets.
_SCRYPT_N = 2**14


class SecretUndecryptable(Exception):
    """A stored secret cannot be opened with the configured key (or with no key)."""


class SecretBox:
    """Seals and opens secrets for storage."""

    _kek: "AESGCM | None" = None

    def __init__(self, key: SecretStr | None, *, salt: str) -> None:
        if key is not None:
            # Imported only when a key is set: cryptography adds ~6.5 MB resident.
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

            derived = Scrypt(salt=salt.encode(), length=32, n=_SCRYPT_N, r=8, p=1).derive(
                key.get_secret_value().encode()
            )
            self._kek = AESGCM(derived)

    @property
    def encrypting(self) -> bool:
        return self._kek is not None

    def seal(self, plaintext: str, *, context: str) -> str:
        if self._kek is None:
            return _PLAIN + plaintext
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aad = context.encode()
        data_key = AESGCM.generate_key(bit_length=256)
        wrap_nonce, nonce = os.urandom(_NONCE), os.urandom(_NONCE)
        wrapped = self._kek.encrypt(wrap_nonce, data_key, aad)
        ciphertext = AESGCM(data_key).encrypt(nonce, plaintext.encode(), aad)
        blob = wrap_nonce + wrapped + nonce + ciphertext
        return _SEALED + base64.urlsafe_b64encode(blob).decode()

    def open(self, stored: str, *, context: str) -> str:
        if stored.startswith(_PLAIN):
            return stored[len(_PLAIN) :]
        if not stored.startswith(_SEALED):
            raise SecretUndecryptable("unknown secret format")
        if self._kek is None:
            raise SecretUndecryptable("secret is encrypted but ENCRYPTION_KEY is not set")
        try:
            blob = base64.urlsafe_b64decode(stored[len(_SEALED) :].encode())
        except ValueError:
            raise SecretUndecryptable("secret is not valid base64") from None
        if len(blob) < _NONCE + _WRAPPED_KEY + _NONCE + 16:
            raise SecretUndecryptable("secret is truncated")
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        aad = context.encode()
        wrap_nonce, rest = blob[:_NONCE], blob[_NONCE:]
        wrapped, rest = rest[:_WRAPPED_KEY], rest[_WRAPPED_KEY:]
        nonce, ciphertext = rest[:_NONCE], rest[_NONCE:]
        try:
            data_key = self._kek.decrypt(wrap_nonce, wrapped, aad)
            return AESGCM(data_key).decrypt(nonce, ciphertext, aad).decode()
        except (InvalidTag, UnicodeDecodeError):
            raise SecretUndecryptable("secret does not open with this ENCRYPTION_KEY") from None

    @staticmethod
    def is_plain(stored: str) -> bool:
        return stored.startswith(_PLAIN)
