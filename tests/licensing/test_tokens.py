"""Licence token verification against hostile tokens
(docs/features/licensing.md#the-licence-token)."""

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from svc_monitor.licensing.keys import EMBEDDED_PUBLIC_KEYS, UntrustedKey, trusted_for_tests
from svc_monitor.licensing.models import Tier
from svc_monitor.licensing.tokens import TokenRefused, verify
from tests.fixtures.licensing import SigningKey


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(header: dict[str, object], claims: dict[str, object], signature: bytes) -> str:
    return ".".join(
        [b64(json.dumps(header).encode()), b64(json.dumps(claims).encode()), b64(signature)]
    )


def refused(token: str, **kwargs: object) -> str:
    with pytest.raises(TokenRefused) as caught:
        verify(token, now=time.time(), **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def claims_of(key: SigningKey) -> dict[str, object]:
    return jwt.decode(key.mint(), options={"verify_signature": False})


class TestGoodTokens:
    def test_claims_are_exposed(self, signing_key: SigningKey):
        token = signing_key.mint(tier="pro", instanceLimit=3, mode="online")
        claims = verify(token, now=time.time(), mode="online")
        assert claims.tier is Tier.PRO
        assert claims.instance_limit == 3
        assert claims.mode == "online"
        assert claims.customer.name == "Acme"
        assert claims.kid == signing_key.kid
        assert claims.expires_at > claims.issued_at

    def test_expired_within_a_minute_of_skew_is_accepted(self, signing_key: SigningKey):
        now = int(time.time())
        verify(signing_key.mint(exp=now - 30), now=now)

    def test_surrounding_whitespace_is_ignored(self, signing_key: SigningKey):
        verify(f"  {signing_key.mint()}\n", now=time.time())


class TestRefused:
    def test_alg_none(self, signing_key: SigningKey):
        token = forged({"alg": "none", "kid": signing_key.kid}, claims_of(signing_key), b"")
        assert "only RS256" in refused(token)

    def test_hs256_maced_with_our_public_key(self, signing_key: SigningKey):
        header = {"alg": "HS256", "kid": signing_key.kid, "typ": "JWT"}
        claims = claims_of(signing_key)
        signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
        mac = hmac.new(signing_key.public_pem.encode(), signing_input.encode(), hashlib.sha256)
        assert "only RS256" in refused(f"{signing_input}.{b64(mac.digest())}")

    def test_attacker_key_with_our_kid(self, signing_key: SigningKey):
        attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = attacker.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        token = SigningKey(signing_key.kid, pem, "").mint()
        assert "signature does not match" in refused(token)

    def test_tampered_payload(self, signing_key: SigningKey):
        header, _, signature = signing_key.mint(tier="pro").split(".")
        claims = {**claims_of(signing_key), "tier": "enterprise"}
        tampered = f"{header}.{b64(json.dumps(claims).encode())}.{signature}"
        assert "signature does not match" in refused(tampered)

    def test_unknown_kid_asks_to_upgrade(self, signing_key: SigningKey):
        message = refused(signing_key.mint(headers={"kid": "lic-2098-12"}))
        assert "lic-2098-12" in message
        assert "upgrade svc-monitor" in message

    @pytest.mark.parametrize(
        "kid", ["../../dev/null", "' OR 1=1--", "k" * 10_000, 42, None, "lic-2026-13"]
    )
    def test_malformed_kid(self, signing_key: SigningKey, kid: object):
        if isinstance(kid, str):
            assert "kid" in refused(signing_key.mint(headers={"kid": kid}))
        else:  # PyJWT will not sign these (a forger would not ask it to); the header is refused
            refused(forged({"alg": "RS256", "kid": kid}, claims_of(signing_key), b"sig"))

    def test_embedded_key_header_is_ignored(self, signing_key: SigningKey):
        attacker = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(attacker.public_key()))
        pem = attacker.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        token = SigningKey(signing_key.kid, pem, "").mint(
            headers={"jwk": jwk, "jku": "http://127.0.0.1:9/keys", "x5u": "http://127.0.0.1:9/c"}
        )
        assert "signature does not match" in refused(token)

    @pytest.mark.parametrize("claim", ["exp", "iat", "iss", "sub", "jti"])
    def test_missing_required_claim(self, signing_key: SigningKey, claim: str):
        assert claim in refused(signing_key.mint(**{claim: None}))

    def test_expired_beyond_the_skew(self, signing_key: SigningKey):
        assert "expired" in refused(signing_key.mint(exp=int(time.time()) - 120))

    def test_issued_in_the_future(self, signing_key: SigningKey):
        assert "future" in refused(signing_key.mint(iat=int(time.time()) + 3600))

    def test_not_before_in_the_future(self, signing_key: SigningKey):
        assert "future" in refused(signing_key.mint(nbf=int(time.time()) + 3600))

    @pytest.mark.parametrize("exp", ["9999999999", 1e308, True, [1]])
    def test_nonsense_expiry_types(self, signing_key: SigningKey, exp: object):
        refused(signing_key.mint(exp=exp))

    def test_negative_expiry_is_expired(self, signing_key: SigningKey):
        assert "expired" in refused(signing_key.mint(exp=-1))

    def test_another_issuer(self, signing_key: SigningKey):
        assert "not issued by" in refused(signing_key.mint(iss="someone-else"))

    def test_unknown_critical_extension(self, signing_key: SigningKey):
        refused(signing_key.mint(headers={"crit": ["exp2"], "exp2": 1}))

    def test_unknown_tier(self, signing_key: SigningKey):
        assert "tier" in refused(signing_key.mint(tier="platinum"))

    def test_wrong_mode(self, signing_key: SigningKey):
        assert "online" in refused(signing_key.mint(mode="online"), mode="offline")

    @pytest.mark.parametrize(
        "token",
        ["a.b.c.d", "not a token", "", "a.b", "ab$.cd!.ef", "x" * 1_000_000],
    )
    def test_garbage(self, token: str):
        refused(token)

    def test_four_segments_of_a_real_token(self, signing_key: SigningKey):
        refused(signing_key.mint() + ".extra")


class TestTrustedKeys:
    def test_the_release_embeds_at_least_one_key_of_proper_length(self):
        from svc_monitor.licensing.keys import load_public_key

        assert EMBEDDED_PUBLIC_KEYS
        for pem in EMBEDDED_PUBLIC_KEYS.values():
            assert load_public_key(pem).key_size >= 2048

    def test_a_short_key_is_refused_when_loaded(self):
        short = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        pem = (
            short.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )
        with pytest.raises(UntrustedKey, match="2048"), trusted_for_tests("lic-2097-01", pem):
            pass

    def test_the_test_hook_ends_with_its_block(self, signing_key: SigningKey):
        private, public = signing_key.private_pem, signing_key.public_pem
        with trusted_for_tests("lic-2097-02", public):
            verify(SigningKey("lic-2097-02", private, public).mint(), now=time.time())
        refused(SigningKey("lic-2097-02", private, public).mint())
