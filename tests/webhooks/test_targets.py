"""Webhook URLs as saved: what is accepted, what is refused and why, and their normal form."""

import pytest

from svc_monitor.webhooks.targets import WebhookUrl, parse_webhook_url

HTTPS_REQUIRED = "HTTPS is required; HTTP is allowed only with NODE_ENV=development"


class TestAccepted:
    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            pytest.param(
                "https://example.com/hook",
                WebhookUrl("https", "example.com", 443, "/hook"),
                id="plain",
            ),
            pytest.param(
                "https://example.com", WebhookUrl("https", "example.com", 443, "/"), id="no-path"
            ),
            pytest.param(
                "https://example.com?x=1",
                WebhookUrl("https", "example.com", 443, "/?x=1"),
                id="query-no-path",
            ),
            pytest.param(
                "HTTPS://Hooks.Example.COM:8443/a/b?x=1&y=%20#section",
                WebhookUrl("https", "hooks.example.com", 8443, "/a/b?x=1&y=%20"),
                id="case-port-query-fragment",
            ),
            pytest.param(
                "https://[2001:db8::1]:9000/in",
                WebhookUrl("https", "2001:db8::1", 9000, "/in"),
                id="ipv6",
            ),
            pytest.param(
                "https://xn--bcher-kva.example/",
                WebhookUrl("https", "xn--bcher-kva.example", 443, "/"),
                id="punycode",
            ),
            pytest.param(
                "https://internal_name.example:443/",
                WebhookUrl("https", "internal_name.example", 443, "/"),
                id="underscore",
            ),
        ],
    )
    def test_https(self, url: str, expected: WebhookUrl):
        assert parse_webhook_url(url, allow_http=False) == expected

    def test_http_in_development(self):
        parsed = parse_webhook_url("http://localhost:8080/hook", allow_http=True)
        assert parsed == WebhookUrl("http", "localhost", 8080, "/hook")

    def test_longest_url_allowed(self):
        url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
        assert parse_webhook_url(url, allow_http=False).path_and_query.endswith("a")

    def test_fragment_cannot_hide_the_host(self):
        # B17: one parser, one host; this host is then refused by the SSRF check.
        parsed = parse_webhook_url("http://127.0.0.1#@example.com/", allow_http=True)
        assert (parsed.host, parsed.path_and_query) == ("127.0.0.1", "/")


class TestRefused:
    @pytest.mark.parametrize(
        "url",
        [
            pytest.param("http://example.com/hook", id="http"),
            pytest.param("file:///etc/passwd", id="file"),
            pytest.param("gopher://example.com/", id="gopher"),
            pytest.param("dict://example.com:11211/", id="dict"),
            pytest.param("ftp://example.com/", id="ftp"),
            pytest.param("ws://example.com/", id="ws"),
            pytest.param("javascript:alert(1)", id="javascript"),
            pytest.param("example.com/hook", id="no-scheme"),
        ],
    )
    def test_not_https_in_production(self, url: str):
        with pytest.raises(ValueError, match=HTTPS_REQUIRED):
            parse_webhook_url(url, allow_http=False)

    @pytest.mark.parametrize(
        "url", ["file:///etc/passwd", "gopher://example.com/", "wss://example.com/"]
    )
    def test_only_http_and_https_in_development(self, url: str):
        with pytest.raises(ValueError, match=r"must start with https:// or http://"):
            parse_webhook_url(url, allow_http=True)

    @pytest.mark.parametrize(
        "url",
        [
            pytest.param("https://user:pass@example.com/", id="user-password"),
            pytest.param("https://token@example.com/", id="user-only"),
            pytest.param("https://@example.com/", id="empty-userinfo"),
            pytest.param("https://example.com@127.0.0.1/", id="host-looking-userinfo"),
        ],
    )
    def test_credentials(self, url: str):
        with pytest.raises(ValueError, match="put them in a custom Authorization header instead"):
            parse_webhook_url(url, allow_http=False)

    @pytest.mark.parametrize(
        ("url", "words"),
        [
            pytest.param("https:///hook", "has no host", id="no-host"),
            pytest.param("https://:443/", "has no host", id="port-only"),
            pytest.param("https://example.com:0/", "port must be between 1 and 65535", id="port-0"),
            pytest.param("https://example.com:65536/", "not valid", id="port-too-big"),
            pytest.param("https://example.com:-1/", "not valid", id="port-negative"),
            pytest.param("https://example.com:https/", "not valid", id="port-name"),
            pytest.param("https://[::1/", "not valid", id="unclosed-bracket"),
            pytest.param("https://[example.com]/", "not valid", id="bracketed-name"),
            pytest.param("https://%6c%6fcalhost/", "not a host name", id="percent-encoded-host"),
            pytest.param("https://exa<mple.com/", "not a host name", id="odd-character"),
            pytest.param("https://ex\u0430mple.com/", "must be ASCII", id="idn-homograph"),
            pytest.param("http://example.com\\@127.0.0.1/", "backslash", id="backslash"),
        ],
    )
    def test_malformed(self, url: str, words: str):
        with pytest.raises(ValueError, match=words):
            parse_webhook_url(url, allow_http=True)

    @pytest.mark.parametrize(
        "url",
        [
            pytest.param("https://example.com/a b", id="space"),
            pytest.param(" https://example.com/", id="leading-space"),
            pytest.param("https://example.com/\t", id="tab"),
            pytest.param("https://exam\nple.com/", id="newline-in-host"),
            pytest.param("https://example.com/\r\nX-Injected: 1", id="crlf"),
            pytest.param("https://example.com/\x00", id="nul"),
            pytest.param("https://example.com/\x7f", id="del"),
            pytest.param("https://example.com/\x85", id="c1-next-line"),
            pytest.param("https://example.com/\u2028", id="line-separator"),
            pytest.param("https://example.com/\u00a0", id="no-break-space"),
        ],
    )
    def test_whitespace_and_control_characters(self, url: str):
        with pytest.raises(ValueError, match="whitespace or control characters"):
            parse_webhook_url(url, allow_http=False)

    def test_too_long(self):
        url = "https://example.com/" + "a" * (2049 - len("https://example.com/"))
        with pytest.raises(ValueError, match="longer than 2048 characters"):
            parse_webhook_url(url, allow_http=False)


class TestNormalForm:
    def test_default_port_stays_out_of_the_host_header(self):
        parsed = parse_webhook_url("https://hooks.example.com/in?x=1", allow_http=False)
        assert parsed.host_header == "hooks.example.com"

    def test_explicit_port_is_in_the_host_header(self):
        parsed = parse_webhook_url("https://hooks.example.com:8443/in", allow_http=False)
        assert parsed.host_header == "hooks.example.com:8443"

    def test_ipv6_host_header_is_bracketed(self):
        parsed = parse_webhook_url("http://[::1]:8080/", allow_http=True)
        assert parsed.host_header == "[::1]:8080"
        assert parsed.url == "http://[::1]:8080/"

    def test_normal_form_drops_default_port_and_fragment(self):
        parsed = parse_webhook_url("https://Example.com:443/p?q=1#frag", allow_http=False)
        assert parsed.url == "https://example.com/p?q=1"
