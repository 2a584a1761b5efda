"""SSRF rules: which delivery targets are refused in production and outside it."""

import ipaddress
import socket

import pytest

from svc_monitor.webhooks.ssrf import UnsafeTarget, literal_address, refusal, resolve_target
from svc_monitor.webhooks.targets import parse_webhook_url

PROD = {"allow_loopback": False}
DEV = {"allow_loopback": True}


def _loopback_hostname() -> str:
    """This machine's own name, which /etc/hosts maps to 127.0.0.1: a real name to resolve."""
    name = socket.gethostname()
    answers = {info[4][0] for info in socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)}
    if not answers or not all(ipaddress.ip_address(a).is_loopback for a in answers):
        pytest.skip(f"{name} does not resolve to loopback only here ({answers})")
    return name


async def _resolve_url(
    url: str, **mode: bool
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """What saving or sending does: parse the URL, then check the host it names."""
    parsed = parse_webhook_url(url, allow_http=True)
    return await resolve_target(parsed.host, parsed.port, **mode)


LOOPBACK_URLS = [
    pytest.param("http://127.0.0.1/", id="127.0.0.1"),
    pytest.param("http://127.255.255.254:8080/", id="127-top"),
    pytest.param("http://[::1]/", id="v6-loopback"),
    pytest.param("http://[0:0:0:0:0:0:0:1]/", id="v6-loopback-long"),
    pytest.param("http://[::ffff:127.0.0.1]/", id="v4-mapped-loopback"),
    pytest.param("http://[::ffff:7f00:1]/", id="v4-mapped-loopback-hex"),
    pytest.param("http://2130706433/", id="decimal"),
    pytest.param("http://0x7f000001/", id="hex"),
    pytest.param("http://017700000001/", id="octal-whole"),
    pytest.param("http://0177.0.0.1/", id="octal-dotted"),
    pytest.param("http://127.1/", id="short-127.1"),
    pytest.param("http://0x7f.1/", id="short-hex-0x7f.1"),
    pytest.param("http://localhost/", id="localhost"),
    pytest.param("http://LOCALHOST/", id="localhost-upper"),
]
# Refused in every mode: private, link-local, metadata, special-purpose, multicast,
# reserved, unspecified, and IPv4 loopback smuggled in NAT64/6to4/IPv4-compatible forms.
ALWAYS_REFUSED_URLS = [
    pytest.param("http://0/", id="zero"),
    pytest.param("http://0.0.0.0/", id="0.0.0.0"),
    pytest.param("http://[::]/", id="v6-unspecified"),
    pytest.param("http://10.0.0.1/", id="10.x"),
    pytest.param("http://10.255.255.255/", id="10.x-top"),
    pytest.param("http://172.16.0.1/", id="172.16.x"),
    pytest.param("http://172.31.255.254/", id="172.31.x"),
    pytest.param("http://192.168.1.1/", id="192.168.x"),
    pytest.param("http://169.254.169.254/latest/meta-data/", id="aws-metadata"),
    pytest.param("http://169.254.170.2/", id="ecs-metadata"),
    pytest.param("http://[fd00:ec2::254]/", id="aws-metadata-v6"),
    pytest.param("http://100.100.100.200/", id="alibaba-metadata"),
    pytest.param("http://[::ffff:169.254.169.254]/", id="v4-mapped-metadata"),
    pytest.param("http://[::ffff:10.0.0.1]/", id="v4-mapped-private"),
    pytest.param("http://100.64.0.1/", id="cgnat"),
    pytest.param("http://198.18.0.1/", id="benchmarking"),
    pytest.param("http://192.0.0.170/", id="ietf-protocol"),
    pytest.param("http://[fd00::1]/", id="v6-unique-local-fd"),
    pytest.param("http://[fc00::1]/", id="v6-unique-local-fc"),
    pytest.param("http://[fe80::1]/", id="v6-link-local"),
    pytest.param("http://[fe80::1%25eth0]/", id="v6-link-local-zone"),
    pytest.param("http://[fec0::1]/", id="v6-site-local"),
    pytest.param("http://224.0.0.1/", id="multicast"),
    pytest.param("http://[ff02::1]/", id="v6-multicast"),
    pytest.param("http://255.255.255.255/", id="broadcast"),
    pytest.param("http://240.0.0.1/", id="reserved"),
    pytest.param("http://[2001:db8::1]/", id="v6-documentation"),
    pytest.param("http://[::127.0.0.1]/", id="v4-compatible-loopback"),
    pytest.param("http://[64:ff9b::7f00:1]/", id="nat64-loopback"),
    pytest.param("http://[64:ff9b::a00:1]/", id="nat64-private"),
    pytest.param("http://[64:ff9b:1::1]/", id="local-nat64"),
    pytest.param("http://[2002:7f00:1::]/", id="6to4-loopback"),
    pytest.param("http://[2002:c0a8:101::]/", id="6to4-private"),
    pytest.param("http://metadata.google.internal/", id="gcp-metadata-name"),
    pytest.param("http://METADATA.google.internal./", id="gcp-metadata-name-dot"),
    pytest.param("http://metadata.amazonaws.com/", id="aws-metadata-name"),
]
PUBLIC_URLS = [
    pytest.param("https://93.184.215.14/", "93.184.215.14", id="v4"),
    pytest.param("https://134744072/", "8.8.8.8", id="v4-decimal"),
    pytest.param("https://[2606:4700:4700::1111]/", "2606:4700:4700::1111", id="v6"),
    pytest.param("https://[::ffff:8.8.8.8]/", "::ffff:8.8.8.8", id="v4-mapped-public"),
]


class TestProduction:
    @pytest.mark.parametrize("url", [*LOOPBACK_URLS, *ALWAYS_REFUSED_URLS])
    async def test_refused(self, url: str):
        with pytest.raises(UnsafeTarget) as caught:
            await _resolve_url(url, **PROD)
        assert caught.value.message.startswith("url: ")
        assert caught.value.message.endswith("may not target private networks in production")

    @pytest.mark.parametrize(
        "url",
        [
            pytest.param("http://localhost./", id="trailing-dot"),
            pytest.param("http://foo.localhost/", id="subdomain"),
            pytest.param("http://Foo.LocalHost./", id="subdomain-mixed-case"),
        ],
    )
    async def test_localhost_names_refused_before_lookup(self, url: str):
        with pytest.raises(UnsafeTarget, match="is the local host"):
            await _resolve_url(url, **PROD)

    async def test_name_resolving_to_loopback_refused(self):
        name = _loopback_hostname()
        with pytest.raises(UnsafeTarget) as caught:
            await resolve_target(name, 443, **PROD)
        assert caught.value.message.startswith(f"url: {name} resolves to 127.")

    @pytest.mark.parametrize("name", ["vm", "runsc"])
    async def test_hosts_file_names_refused(self, name: str):
        try:
            socket.getaddrinfo(name, 443)
        except OSError:
            pytest.skip(f"{name} is not in this machine's /etc/hosts")
        with pytest.raises(UnsafeTarget, match=r"resolves to 127\.0\.0\.1, a loopback address"):
            await resolve_target(name, 443, **PROD)

    async def test_message_names_address_and_rule(self):
        with pytest.raises(UnsafeTarget) as caught:
            await resolve_target("10.0.0.1", 443, **PROD)
        assert caught.value.message == (
            "url: 10.0.0.1 is a private address; "
            "webhooks may not target private networks in production"
        )

    async def test_odd_spelling_is_translated(self):
        with pytest.raises(UnsafeTarget) as caught:
            await resolve_target("2130706433", 443, **PROD)
        assert caught.value.message.startswith("url: 2130706433 means 127.0.0.1, a loopback")

    async def test_embedded_address_is_named(self):
        with pytest.raises(UnsafeTarget) as caught:
            await resolve_target("::ffff:127.0.0.1", 443, **PROD)
        assert "loopback" in caught.value.message
        assert "IPv4-mapped form of 127.0.0.1" in caught.value.message

    @pytest.mark.parametrize(("url", "expected"), PUBLIC_URLS)
    async def test_public_addresses_allowed(self, url: str, expected: str):
        assert await _resolve_url(url, **PROD) == [ipaddress.ip_address(expected)]

    async def test_unresolvable_name_refused(self):
        with pytest.raises(UnsafeTarget, match=r"no-such-host\.invalid could not be resolved"):
            await resolve_target("no-such-host.invalid", 443, **PROD)


class TestOutsideProduction:
    @pytest.mark.parametrize("url", LOOPBACK_URLS)
    async def test_loopback_allowed(self, url: str):
        addresses = await _resolve_url(url, **DEV)
        assert addresses
        assert all(refusal(a, **DEV) is None for a in addresses)

    async def test_loopback_name_allowed_and_pinned(self):
        name = _loopback_hostname()
        addresses = await resolve_target(name, 443, **DEV)
        assert addresses[0] == ipaddress.IPv4Address("127.0.0.1")

    @pytest.mark.parametrize("url", ALWAYS_REFUSED_URLS)
    async def test_everything_else_still_refused(self, url: str):
        with pytest.raises(UnsafeTarget) as caught:
            await _resolve_url(url, **DEV)
        assert "outside production webhooks may target public addresses and loopback only" in (
            caught.value.message
        )


class TestLiteralAddress:
    @pytest.mark.parametrize(
        ("host", "expected"),
        [
            pytest.param("127.0.0.1", "127.0.0.1", id="dotted"),
            pytest.param("2130706433", "127.0.0.1", id="decimal"),
            pytest.param("0x7f000001", "127.0.0.1", id="hex"),
            pytest.param("0X7F000001", "127.0.0.1", id="hex-upper"),
            pytest.param("017700000001", "127.0.0.1", id="octal"),
            pytest.param("0177.0.0.1", "127.0.0.1", id="octal-dotted"),
            pytest.param("127.1", "127.0.0.1", id="two-part"),
            pytest.param("10.1.1", "10.1.0.1", id="three-part"),
            pytest.param("0x7f.1", "127.0.0.1", id="hex-two-part"),
            pytest.param("0", "0.0.0.0", id="zero"),
            pytest.param("::1", "::1", id="v6"),
            pytest.param("[::1]", "::1", id="v6-bracketed"),
            pytest.param("fe80::1%eth0", "fe80::1", id="v6-zone"),
            pytest.param("[fe80::1%25eth0]", "fe80::1", id="v6-zone-url-encoded"),
            pytest.param("::ffff:127.0.0.1", "::ffff:127.0.0.1", id="v4-mapped"),
        ],
    )
    def test_spellings_the_resolver_accepts(self, host: str, expected: str):
        assert literal_address(host) == ipaddress.ip_address(expected)

    @pytest.mark.parametrize(
        "host",
        [
            pytest.param("example.com", id="name"),
            pytest.param("cafe", id="hex-letters-name"),
            pytest.param("vm", id="hosts-file-name"),
            pytest.param("1.2.3.4.5", id="five-parts"),
            pytest.param("256.1.1.1", id="octet-too-big"),
            pytest.param("127.0.0.1.", id="trailing-dot"),
            pytest.param("[not-v6]", id="bracketed-junk"),
        ],
    )
    def test_names_are_not_literals(self, host: str):
        assert literal_address(host) is None

    def test_literal_matches_what_the_resolver_connects_to(self):
        # The reason literal_address exists: ipaddress rejects these, getaddrinfo does not.
        for host in ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0"]:
            [info, *_] = socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)
            assert literal_address(host) == ipaddress.ip_address(info[4][0]), host


class TestRefusal:
    @pytest.mark.parametrize(
        ("address", "words"),
        [
            pytest.param("127.0.0.1", "a loopback address", id="loopback"),
            pytest.param("0.0.0.0", "the unspecified address", id="unspecified"),
            pytest.param("0.1.2.3", "0.0.0.0/8", id="this-network"),
            pytest.param("169.254.169.254", "a link-local address", id="link-local"),
            pytest.param("224.0.0.1", "a multicast address", id="multicast"),
            pytest.param("100.64.0.1", "carrier-grade NAT", id="cgnat"),
            pytest.param("192.168.0.1", "a private address", id="private"),
            pytest.param("fec0::1", "a site-local address", id="site-local"),
            pytest.param("2002:7f00:1::", "6to4 form of 127.0.0.1", id="6to4"),
            pytest.param("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1", id="nat64"),
            pytest.param("::127.0.0.1", "IPv4-compatible form of 127.0.0.1", id="compatible"),
        ],
    )
    def test_says_why(self, address: str, words: str):
        problem = refusal(ipaddress.ip_address(address), **PROD)
        assert problem is not None
        assert problem.startswith(f"{ipaddress.ip_address(address)} is ")
        assert words in problem

    def test_public_address_has_no_refusal(self):
        assert refusal(ipaddress.ip_address("1.1.1.1"), **PROD) is None
        assert refusal(ipaddress.ip_address("2606:4700:4700::1111"), **PROD) is None
