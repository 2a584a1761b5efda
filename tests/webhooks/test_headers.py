"""Custom webhook headers: restricted names, header injection, limits, masking."""

import pytest

from svc_monitor.webhooks.headers import (
    RESTRICTED_HEADERS,
    check_custom_headers,
    is_sensitive_header,
    mask_value,
)


class TestCheckCustomHeaders:
    def test_ordinary_headers_accepted(self):
        check_custom_headers(
            {
                "Authorization": "Bearer abc.def",
                "X-Tenant": "a b\tc",
                "X-Empty": "",
                "X-Token_2": "!#$%&'*+-.^_`|~",
            }
        )

    def test_limits_reached_but_not_passed(self):
        headers = {f"X-H{i}": "v" for i in range(19)}
        headers["X-" + "n" * 98] = "v" * 2048
        check_custom_headers(headers)

    @pytest.mark.parametrize("name", sorted(RESTRICTED_HEADERS))
    def test_restricted_in_any_case(self, name: str):
        for spelled in (name, name.upper(), name.title()):
            with pytest.raises(ValueError, match=f"header {spelled} may not be set"):
                check_custom_headers({spelled: "x"})

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("X-Webhook-Signature", id="signature"),
            pytest.param("x-webhook-timestamp", id="timestamp"),
            pytest.param("X-WEBHOOK-ID", id="id"),
            pytest.param("X-Webhook-Anything", id="any-x-webhook"),
            pytest.param("Proxy-Authorization", id="proxy-authorization"),
            pytest.param("Proxy-Anything", id="any-proxy"),
        ],
    )
    def test_restricted_prefixes(self, name: str):
        with pytest.raises(ValueError, match=f"header {name} may not be set"):
            check_custom_headers({name: "x"})

    @pytest.mark.parametrize(
        "name",
        [
            pytest.param("", id="empty"),
            pytest.param("X Custom", id="space"),
            pytest.param("X-Custom:", id="colon"),
            pytest.param("X-Custom\r\nX-Injected", id="crlf"),
            pytest.param("X-Custom\n", id="trailing-newline"),
            pytest.param("X-Cüstom", id="non-ascii"),
            pytest.param("(X)", id="parentheses"),
            pytest.param("X/Y", id="slash"),
            pytest.param("X-\x00", id="nul"),
        ],
    )
    def test_name_not_a_token(self, name: str):
        with pytest.raises(ValueError, match="is not a valid HTTP header name"):
            check_custom_headers({name: "x"})

    @pytest.mark.parametrize(
        "value",
        [
            pytest.param("s3cr3t\r\nX-Injected: 1", id="crlf-injection"),
            pytest.param("s3cr3t\nX", id="lf"),
            pytest.param("s3cr3t\rX", id="cr"),
            pytest.param("s3cr3t\x00", id="nul"),
            pytest.param("s3cr3t\x01", id="control"),
            pytest.param("s3cr3t\x7f", id="del"),
            pytest.param("s3cr3t\u2028", id="line-separator"),
            pytest.param("s3cr3té", id="non-ascii"),
            pytest.param(" s3cr3t", id="leading-space"),
            pytest.param("s3cr3t ", id="trailing-space"),
        ],
    )
    def test_value_with_control_characters(self, value: str):
        with pytest.raises(ValueError, match="value of header X-Api-Key") as caught:
            check_custom_headers({"X-Api-Key": value})
        assert "s3cr3t" not in str(caught.value)

    def test_too_many(self):
        with pytest.raises(ValueError, match="at most 20 custom headers are allowed, got 21"):
            check_custom_headers({f"X-H{i}": "v" for i in range(21)})

    def test_name_too_long(self):
        with pytest.raises(ValueError, match="longer than 100 characters"):
            check_custom_headers({"X-" + "n" * 99: "v"})

    def test_value_too_long(self):
        with pytest.raises(ValueError, match="value of header X-Big is longer than 2048") as caught:
            check_custom_headers({"X-Big": "s" * 2049})
        assert "sss" not in str(caught.value)

    def test_same_name_twice_in_different_case(self):
        with pytest.raises(ValueError, match="given twice"):
            check_custom_headers({"X-Tenant": "a", "x-tenant": "b"})


class TestIsSensitiveHeader:
    @pytest.mark.parametrize(
        "name",
        [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "X-Auth-Token",
            "X-Client-Secret",
            "X-Password",
            "X-Hub-Signature",
            "APIKEY",
        ],
    )
    def test_credentials(self, name: str):
        assert is_sensitive_header(name)

    @pytest.mark.parametrize("name", ["X-Tenant", "Accept", "X-Request-Id", "X-Environment"])
    def test_ordinary(self, name: str):
        assert not is_sensitive_header(name)


class TestMaskValue:
    @pytest.mark.parametrize(
        ("value", "masked"),
        [
            pytest.param("", "***", id="empty"),
            pytest.param("abc", "***", id="3-chars"),
            pytest.param("abcd", "a***", id="4-chars"),
            pytest.param("abcdefgh", "ab***", id="8-chars"),
            pytest.param("abcdefghijklmno", "abc***", id="15-chars"),
            pytest.param("abcdefghijklmnop", "abcd***", id="16-chars"),
            pytest.param("Bearer " + "x" * 200, "Bear***", id="long"),
        ],
    )
    def test_shows_at_most_a_quarter_and_four_characters(self, value: str, masked: str):
        assert mask_value(value) == masked
