"""The keys that verify the sign-in broker's assertions.

A release that turns third-party sign-in on for the hosted broker embeds its public key
here, keyed by the broker's origin; until then an operator enables it with
AUTH_BROKER_PUBLIC_KEY (a PEM public key, checked by config.py at startup with
kit/public_keys.py, which says which keys are accepted).
"""

from svc_monitor.kit.public_keys import PublicKey, load_public_key

# Broker origin -> PEM public keys this release trusts for it (empty: no release has
# enabled the hosted broker yet; AUTH_BROKER_PUBLIC_KEY does meanwhile).
EMBEDDED_BROKER_KEYS: dict[str, tuple[str, ...]] = {}


def trusted_keys(broker_origin: str, configured: str | None) -> tuple[PublicKey, ...]:
    """The embedded keys for this broker, then the configured one, if any."""
    pems = [*EMBEDDED_BROKER_KEYS.get(broker_origin, ()), *([configured] if configured else [])]
    return tuple(load_public_key(p) for p in pems)
