"""Which addresses a webhook may be delivered to (SSRF protection).

The rule is "deny unless public": an address must be `is_global` and none of the kinds
listed in `_reason` (docs/features/webhooks.md#webhook-targets-ssrf-protection). Two traps
shape the code:

- `ipaddress` rejects IPv4 spellings the system resolver accepts (`2130706433`, `0x7f.1`,
  `0177.0.0.1`, `127.1`, `0`), so a "not an IP, must be a name" conclusion would let
  loopback through. `literal_address` parses them the way the resolver does, and names are
  resolved and every answer checked, so a spelling missed here is still caught there.
- Python 3.11 calls `::ffff:127.0.0.1` not loopback and `::127.0.0.1`, `64:ff9b::7f00:1`,
  `2002:7f00:1::`, `224.0.0.1`, `fec0::1` and `ff02::1` global, so embedded IPv4
  addresses are unwrapped and multicast/site-local are refused by name.

The caller connects to the first address `resolve_target` returns (pinning it, with the
name in the Host header and SNI), so a DNS answer that changes between the check and the
connection (rebinding) cannot redirect the delivery.
"""

import asyncio
import ipaddress
import re
import socket
from typing import TypeAlias

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

# What the resolver reads as a numeric IPv4 address is made of these characters only;
# anything else is a name (or IPv6) and never reaches inet_aton.
_IPV4_SPELLING = re.compile(r"[0-9a-fA-FxX.]+")

# Networks refused whatever the installed Python's `is_global` says about them (its
# tables changed within 3.11 patch releases).
_SHARED_NAT = ipaddress.IPv4Network("100.64.0.0/10")  # carrier-grade NAT; Alibaba metadata
_BENCHMARKING = ipaddress.IPv4Network("198.18.0.0/15")
_IETF_PROTOCOL = ipaddress.IPv4Network("192.0.0.0/24")
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")  # Linux connects 0.0.0.0 to the local host
_LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")

# IPv6 forms that carry an IPv4 address in their last 32 bits. IPv4-mapped is handled by
# `ipv4_mapped`, 6to4 by `sixtofour`.
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# Local-use NAT64 (RFC 8215) may embed the IPv4 address at several prefix lengths, so it
# cannot be unwrapped reliably: refused outright.
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")

# Cloud metadata services by name; their addresses (169.254.169.254, fd00:ec2::254,
# 100.100.100.200) are refused by the address rules.
_METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.amazonaws.com"})


class UnsafeTarget(Exception):
    """A delivery target the SSRF rules refuse; `message` is for the operator, secret-free."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def literal_address(host: str) -> IPAddress | None:
    """The address `host` spells out, as the system resolver reads it; None for a name.

    Accepts `[v6]` brackets and an IPv6 zone (`fe80::1%eth0`, or `%25eth0` as URLs write
    it); the zone is dropped because it does not change which kind of address it is.
    """
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
    if _IPV4_SPELLING.fullmatch(host):
        try:
            # inet_aton is the parser glibc's getaddrinfo uses for numeric hosts: decimal,
            # hex, octal and the 1-, 2- and 3-part short forms.
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _unwrap(address: IPAddress) -> tuple[IPAddress, str | None]:
    """The IPv4 address embedded in an IPv6 one, with the name of the embedding."""
    if isinstance(address, ipaddress.IPv4Address):
        return address, None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped, "IPv4-mapped"
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are IPv6 proper
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "IPv4-compatible"
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "NAT64"
    if address.sixtofour is not None:
        return address.sixtofour, "6to4"
    return address, None


def _reason(address: IPAddress) -> str | None:
    """What kind of non-public address this is, or None when it is public."""
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_site_local:
            return "a site-local address"
        if address in _LOCAL_NAT64:
            return "a local-use NAT64 address"
    else:
        if address in _THIS_NETWORK:
            return "in 0.0.0.0/8, which reaches the local host"
        if address in _SHARED_NAT:
            return "in the shared address space 100.64.0.0/10 (carrier-grade NAT)"
        if address in _BENCHMARKING or address in _IETF_PROTOCOL:
            return "a special-purpose address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a public address"
    return None


def refusal(address: IPAddress, *, allow_loopback: bool) -> str | None:
    """Why `address` may not be a webhook target, or None when it may.

    `allow_loopback` is the rule outside production (loopback targets allowed,
    docs/features/webhooks.md#webhook-targets-ssrf-protection): 127.0.0.0/8 and ::1, also
    written IPv4-mapped, pass; every other non-public address, 0.0.0.0 included, is still
    refused.
    """
    kind = _refused_kind(address, allow_loopback=allow_loopback)
    if kind is None:
        return None
    return f"{_without_zone(address)} is {kind}; {_policy(allow_loopback)}"


async def resolve_target(host: str, port: int, *, allow_loopback: bool) -> list[IPAddress]:
    """The addresses `host` stands for, every one checked; UnsafeTarget if any is refused.

    In resolver order, without duplicates. Connect to the first one and do not look the
    name up again. The lookup has no deadline of its own; wrap the call in the delivery's.
    """
    literal = literal_address(host)
    if literal is not None:
        kind = _refused_kind(literal, allow_loopback=allow_loopback)
        if kind is None:
            return [literal]
        written = host.strip("[]").split("%", 1)[0]
        if written.lower() == str(literal):
            raise UnsafeTarget(f"url: {literal} is {kind}; {_policy(allow_loopback)}")
        # Say what an odd spelling such as 2130706433 or 0x7f.1 stands for.
        raise UnsafeTarget(f"url: {written} means {literal}, {kind}; {_policy(allow_loopback)}")
    _check_name(host, allow_loopback=allow_loopback)
    loop = asyncio.get_running_loop()
    try:
        answers = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError):  # gaierror, or a name the idna codec refuses
        raise UnsafeTarget(f"url: host {host} could not be resolved") from None
    addresses: list[IPAddress] = []
    for *_, sockaddr in answers:
        # An IPv6 sockaddr may carry its zone as "fe80::1%eth0"; the zone is not needed.
        address = literal_address(str(sockaddr[0]))
        if address is None:  # not an IP family; a TCP lookup returns none of those
            continue
        if address in addresses:
            continue
        kind = _refused_kind(address, allow_loopback=allow_loopback)
        if kind is not None:
            raise UnsafeTarget(
                f"url: {host} resolves to {address}, {kind}; {_policy(allow_loopback)}"
            )
        addresses.append(address)
    if not addresses:
        raise UnsafeTarget(f"url: host {host} could not be resolved")
    return addresses


def _refused_kind(address: IPAddress, *, allow_loopback: bool) -> str | None:
    """`refusal` without the address and the policy: "a loopback address"."""
    address = _without_zone(address)
    inner, embedding = _unwrap(address)
    if allow_loopback and embedding in (None, "IPv4-mapped") and _is_loopback(inner):
        return None
    kind = _reason(inner)
    if kind is not None and embedding is not None:
        kind = f"{kind} ({embedding} form of {inner})"
    return kind


def _without_zone(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id is not None:
        return ipaddress.IPv6Address(int(address))
    return address


def _check_name(host: str, *, allow_loopback: bool) -> None:
    """Refuse names that mean the local host or a metadata service before any lookup."""
    name = host.lower().rstrip(".")
    if name in _METADATA_NAMES:
        raise UnsafeTarget(f"url: {host} is a cloud metadata service; {_policy(allow_loopback)}")
    if not allow_loopback and (name == "localhost" or name.endswith(".localhost")):
        raise UnsafeTarget(f"url: {host} is the local host; {_policy(allow_loopback)}")


def _is_loopback(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return address in _LOOPBACK_V4
    return address == ipaddress.IPv6Address(1)


def _policy(allow_loopback: bool) -> str:
    if allow_loopback:
        return "outside production webhooks may target public addresses and loopback only"
    return "webhooks may not target private networks in production"
