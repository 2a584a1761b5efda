import pytest
from hypothesis import given, strategies as st

from svc_monitor.kit.addresses import ParsedUrl, parse_connection_url, split_host_port


class TestParseConnectionUrl:
    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            pytest.param(
                "redis://alice:s3cret@127.0.0.1:6380/2",
                ParsedUrl("127.0.0.1", 6380, "alice", "s3cret", tls=False, db=2),
                id="everything",
            ),
            pytest.param(
                "redis://127.0.0.1",
                ParsedUrl("127.0.0.1", None, None, None, tls=False, db=None),
                id="host-only",
            ),
            pytest.param(
                "redis://:pw@127.0.0.1:6379",
                ParsedUrl("127.0.0.1", 6379, None, "pw", tls=False, db=None),
                id="password-without-user",
            ),
            pytest.param(
                "redis://alice@127.0.0.1/",
                ParsedUrl("127.0.0.1", None, "alice", None, tls=False, db=None),
                id="user-without-password",
            ),
            pytest.param(
                "rediss://127.0.0.1:6380",
                ParsedUrl("127.0.0.1", 6380, None, None, tls=True, db=None),
                id="rediss-is-tls",
            ),
            pytest.param(
                "valkey://127.0.0.1:6380/0",
                ParsedUrl("127.0.0.1", 6380, None, None, tls=False, db=0),
                id="valkey",
            ),
            pytest.param(
                "valkeys://127.0.0.1:6380",
                ParsedUrl("127.0.0.1", 6380, None, None, tls=True, db=None),
                id="valkeys-is-tls",
            ),
            pytest.param(
                "  REDISS://127.0.0.1:6380  ",
                ParsedUrl("127.0.0.1", 6380, None, None, tls=True, db=None),
                id="scheme-case-and-spaces",
            ),
            pytest.param(
                "redis://u:p@[::1]:6380/3",
                ParsedUrl("::1", 6380, "u", "p", tls=False, db=3),
                id="ipv6",
            ),
            pytest.param(
                "redis://us%40er:p%40ss%3Aw%2Fo%25rd+x@127.0.0.1:6379",
                ParsedUrl("127.0.0.1", 6379, "us@er", "p@ss:w/o%rd+x", tls=False, db=None),
                id="percent-encoded-credentials",
            ),
        ],
    )
    def test_splits_a_url_into_its_parts(self, url: str, expected: ParsedUrl) -> None:
        assert parse_connection_url(url) == expected

    @pytest.mark.parametrize(
        ("url", "says"),
        [
            pytest.param("ftp://x", "must start with redis://", id="other-scheme"),
            pytest.param("127.0.0.1:6379", "must start with redis://", id="no-scheme"),
            pytest.param("redis://", "has no host", id="no-host"),
            pytest.param("redis://:pw@:6379", "has no host", id="credentials-no-host"),
            pytest.param("redis://host:notaport", "not a valid connection URL", id="word-port"),
            pytest.param("redis://host:70000", "not a valid connection URL", id="port-too-big"),
            pytest.param("redis://host:0", "between 1 and 65535", id="port-zero"),
            pytest.param("redis://host/db1", "is not a number", id="word-db"),
            pytest.param("redis://host/²", "is not a number", id="superscript-db"),
        ],
    )
    def test_malformed_url_raises_value_error_saying_why(self, url: str, says: str) -> None:
        with pytest.raises(ValueError, match=says):
            parse_connection_url(url)

    @given(st.text(max_size=60))
    def test_any_text_parses_or_raises_value_error(self, text: str) -> None:
        try:
            parsed = parse_connection_url(text)
        except ValueError:
            return
        assert parsed.host
        assert parsed.port is None or 1 <= parsed.port <= 65535


class TestSplitHostPort:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            pytest.param("cache.example.com:12000", ("cache.example.com", 12000), id="name-port"),
            pytest.param("127.0.0.1:6380", ("127.0.0.1", 6380), id="ipv4-port"),
            pytest.param("cache.example.com", ("cache.example.com", None), id="name-only"),
            pytest.param("  127.0.0.1:6380 ", ("127.0.0.1", 6380), id="spaces-around"),
            pytest.param("[::1]:6380", ("::1", 6380), id="bracketed-ipv6-port"),
            pytest.param("[::1]", ("::1", None), id="bracketed-ipv6"),
            pytest.param("::1", ("::1", None), id="bare-ipv6"),
            pytest.param("fe80::1:6380", ("fe80::1:6380", None), id="bare-ipv6-is-no-port"),
            pytest.param("h:65535", ("h", 65535), id="highest-port"),
            pytest.param("h:1", ("h", 1), id="lowest-port"),
        ],
    )
    def test_splits_host_and_port(self, text: str, expected: tuple[str, int | None]) -> None:
        assert split_host_port(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("h:0", id="port-zero"),
            pytest.param("h:70000", id="port-too-big"),
            pytest.param("h:", id="empty-port"),
            pytest.param("h:abc", id="word-port"),
            pytest.param("h:-1", id="negative-port"),
            pytest.param("h:²", id="superscript-digit"),
            pytest.param("h:١٢", id="arabic-indic-digits"),
            pytest.param("[::1]6380", id="text-after-bracket"),
            pytest.param("[::1]:", id="bracket-empty-port"),
            pytest.param("[::1:6380", id="unclosed-bracket"),
        ],
    )
    def test_bad_port_or_brackets_raise_value_error(self, text: str) -> None:
        with pytest.raises(ValueError, match=r"port|IPv6|\]"):
            split_host_port(text)

    @given(st.text(max_size=40))
    def test_any_text_splits_or_raises_value_error(self, text: str) -> None:
        try:
            _, port = split_host_port(text)
        except ValueError:
            return
        assert port is None or 1 <= port <= 65535
