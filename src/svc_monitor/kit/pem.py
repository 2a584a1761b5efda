"""Checks of the PEM text a connection's TLS fields take, with messages for people.

Each check raises ValueError naming what is wrong (never echoing the text: a key pasted
into the wrong field must not come back in an error). cryptography is imported only here
and only when TLS material is given: it adds ~6.5 MB resident (see secrets.py).
"""

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.x509 import Certificate

_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")
_KEY_LABELS = {"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"}
_DECRYPT = "give it without a passphrase (openssl pkey -in key.pem -out key-plain.pem)"


@dataclass(frozen=True, slots=True)
class CertSummary:
    subject: str
    not_after_ms: int


def check_certificates(text: str, *, what: str, key_goes_in: str = "tlsKey") -> str:
    """One or more PEM certificates and nothing else (`what` names them in messages,
    `key_goes_in` the field a client key belongs in)."""
    labels = _labels(text)
    if any("PRIVATE KEY" in label for label in labels):
        raise ValueError(
            f"holds a private key: give only {what} here (a client key goes in {key_goes_in})"
        )
    if not labels:
        raise ValueError(f"is not PEM: expected {what} starting with -----BEGIN CERTIFICATE-----")
    if any(label != "CERTIFICATE" for label in labels):
        raise ValueError(f"must hold only {what} (-----BEGIN CERTIFICATE----- blocks)")
    _certificates(text)
    return text


def check_private_key(text: str) -> str:
    """Exactly one unencrypted PEM private key (PKCS#8, RSA or EC)."""
    labels = _labels(text)
    if not labels:
        raise ValueError("is not PEM: expected a key starting with -----BEGIN PRIVATE KEY-----")
    if "ENCRYPTED PRIVATE KEY" in labels or "Proc-Type: 4,ENCRYPTED" in text:
        raise ValueError(f"is an encrypted private key: {_DECRYPT}")
    if len(labels) != 1 or labels[0] not in _KEY_LABELS:
        raise ValueError("must hold exactly one private key (-----BEGIN PRIVATE KEY-----)")
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(text.encode(), password=None)
    except TypeError:
        raise ValueError(f"is an encrypted private key: {_DECRYPT}") from None
    except Exception:  # ValueError, UnsupportedAlgorithm: the text says nothing safe to echo
        raise ValueError("is not a private key this service can read") from None
    return text


def key_matches(cert_pem: str, key_pem: str) -> bool:
    """Whether the key is the private half of the first certificate's public key."""
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_private_key,
    )

    spki = Encoding.DER, PublicFormat.SubjectPublicKeyInfo
    try:
        public = _certificates(cert_pem)[0].public_key().public_bytes(*spki)
        private = load_pem_private_key(key_pem.encode(), password=None)
        return bool(private.public_key().public_bytes(*spki) == public)
    except Exception:  # a key type cryptography cannot compare: not a pair we can use
        return False


def summary(cert_pem: str) -> CertSummary | None:
    """Subject and expiry of the first certificate; None if it no longer parses."""
    try:
        cert = _certificates(cert_pem)[0]
        return CertSummary(
            subject=cert.subject.rfc4514_string(),
            not_after_ms=int(cert.not_valid_after_utc.timestamp() * 1000),
        )
    except Exception:  # shown for information only: a read must not fail over it
        return None


def _labels(text: str) -> list[str]:
    return _BLOCK.findall(text)


def _certificates(text: str) -> "list[Certificate]":
    from cryptography.x509 import load_pem_x509_certificates

    try:
        certificates = load_pem_x509_certificates(text.encode())
    except Exception:  # ValueError mostly; nothing from a bad input may become a 500
        raise ValueError("is not a valid PEM certificate") from None
    if not certificates:
        raise ValueError("holds no certificate")
    return certificates
