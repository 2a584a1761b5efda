"""X-Webhook-Signature: checked against openssl, and the receiver's verify() rules."""

import shutil
import subprocess

import pytest

from svc_monitor.webhooks.signing import signature, verify

SECRET = "whsec_8d1f0c2e"
NOW_MS = 1_790_000_000_000
BODY = b'{"id":"4f0c","event":"instance.down","timestamp":1790000000000,"data":{}}'


def openssl_hmac(key: str, message: bytes) -> str:
    """HMAC-SHA256 computed by another implementation than Python's hmac module."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    done = subprocess.run(
        ["openssl", "dgst", "-sha256", "-hmac", key],
        input=message,
        capture_output=True,
        check=True,
        timeout=30,
    )
    # "SHA2-256(stdin)= <hex>" (OpenSSL 3) or "(stdin)= <hex>" (1.1)
    return done.stdout.decode().rsplit("= ", 1)[1].strip()


class TestSignature:
    @pytest.mark.parametrize(
        ("secret", "body"),
        [
            pytest.param(SECRET, BODY, id="envelope"),
            pytest.param("It's a Secret to Everybody", b"Hello, World!", id="github-secret"),
            pytest.param("s\u00e9cret-\u043a\u043b\u044e\u0447", BODY, id="non-ascii-secret"),
            pytest.param(SECRET, '{"m":"caf\u00e9\\r\\n"}\n'.encode(), id="utf8-body"),
            pytest.param(SECRET, b"", id="empty-body"),
        ],
    )
    def test_matches_openssl_over_timestamp_dot_body(self, secret: str, body: bytes):
        expected = openssl_hmac(secret, f"{NOW_MS}.".encode() + body)
        assert signature(secret, NOW_MS, body) == expected

    @pytest.mark.parametrize("secret", [None, ""], ids=["none", "empty"])
    def test_without_secret_key_is_empty(self, secret: str | None):
        assert signature(secret, NOW_MS, BODY) == openssl_hmac("", f"{NOW_MS}.".encode() + BODY)

    def test_is_lowercase_hex_sha256(self):
        digest = signature(SECRET, NOW_MS, BODY)
        assert len(digest) == 64
        assert digest == digest.lower()
        int(digest, 16)

    def test_covers_timestamp_and_every_byte(self):
        base = signature(SECRET, NOW_MS, BODY)
        assert signature(SECRET, NOW_MS + 1, BODY) != base
        assert signature(SECRET, NOW_MS, BODY + b" ") != base
        # Same JSON, serialised differently: a different signature (raw bytes are signed).
        assert signature(SECRET, NOW_MS, BODY.replace(b":", b": ")) != base


def _verify(
    secret: str = SECRET,
    *,
    body: bytes = BODY,
    timestamp: str | None = str(NOW_MS),
    sig: str | None = None,
    now_ms: int = NOW_MS,
) -> bool:
    if sig is None:
        sig = signature(SECRET, NOW_MS, BODY)
    return verify(
        secret, body=body, timestamp_header=timestamp, signature_header=sig, now_ms=now_ms
    )


class TestVerify:
    def test_genuine_delivery_accepted(self):
        assert _verify()

    @pytest.mark.parametrize(
        "now_ms",
        [
            pytest.param(NOW_MS + 300_000, id="300s-old"),
            pytest.param(NOW_MS - 300_000, id="300s-future"),
        ],
    )
    def test_edge_of_window_accepted(self, now_ms: int):
        assert _verify(now_ms=now_ms)

    @pytest.mark.parametrize(
        "kwargs",
        [
            pytest.param({"body": BODY.replace(b"down", b"up!!")}, id="tampered-body"),
            pytest.param({"body": BODY + b"\n"}, id="extra-byte"),
            pytest.param({"secret": "whsec_other"}, id="wrong-secret"),
            pytest.param({"now_ms": NOW_MS + 301_000}, id="301s-old"),
            pytest.param({"now_ms": NOW_MS - 301_000}, id="301s-future"),
            pytest.param({"timestamp": str(NOW_MS + 1)}, id="timestamp-changed"),
            pytest.param({"timestamp": None}, id="missing-timestamp"),
            pytest.param({"timestamp": ""}, id="empty-timestamp"),
            pytest.param({"timestamp": "abc"}, id="non-numeric-timestamp"),
            pytest.param({"timestamp": "-5"}, id="negative-timestamp"),
            pytest.param({"timestamp": "1.79e12"}, id="float-timestamp"),
            pytest.param({"timestamp": f" {NOW_MS}"}, id="spaced-timestamp"),
            pytest.param({"timestamp": "\u0661\u0667\u0669"}, id="arabic-digit-timestamp"),
            pytest.param({"timestamp": "9" * 5000}, id="huge-timestamp"),
            pytest.param({"sig": ""}, id="empty-signature"),
            pytest.param({"sig": "0" * 64}, id="zero-signature"),
            pytest.param({"sig": "\u00e9" * 64}, id="non-ascii-signature"),
        ],
    )
    def test_rejected(self, kwargs: dict[str, object]):
        assert not _verify(**kwargs)  # type: ignore[arg-type]

    def test_missing_signature_rejected(self):
        assert not verify(
            SECRET, body=BODY, timestamp_header=str(NOW_MS), signature_header=None, now_ms=NOW_MS
        )

    def test_custom_tolerance(self):
        sig = signature(SECRET, NOW_MS, BODY)
        for late_ms, accepted in [(10_000, True), (10_001, False)]:
            assert (
                verify(
                    SECRET,
                    body=BODY,
                    timestamp_header=str(NOW_MS),
                    signature_header=sig,
                    now_ms=NOW_MS + late_ms,
                    tolerance_ms=10_000,
                )
                is accepted
            )
