"""The pattern rule and the size buckets (pure functions)."""

import pytest

from svc_monitor.key_analytics.key_patterns import MAX_PATTERN_CHARS, bucket_of, pattern_of


class TestPatternOf:
    @pytest.mark.parametrize(
        ("key", "pattern"),
        [
            pytest.param(b"user:42", "user:*", id="digits"),
            pytest.param(b"user:42:profile", "user:*:profile", id="names-stay"),
            pytest.param(b"session:550e8400-e29b-41d4-a716-446655440000", "session:*", id="uuid"),
            pytest.param(b"obj_5f1d7a9c3b2e4d1a9c8b7a6f", "obj_*", id="24-hex"),
            pytest.param(b"cache.v2.99", "cache.v2.*", id="dots-kept"),
            pytest.param(b"tok:aZ9kLm2Qx8Rt5Vb1Nw", "tok:*", id="base62-token"),
            pytest.param(b"feed:cafe", "feed:cafe", id="short-hex-word-stays"),
            pytest.param(b"12345", "*", id="bare-number"),
            pytest.param(b"img/2024/01/x.png", "img/*/*/x.png", id="slashes"),
            pytest.param(b"plain", "plain", id="no-separator"),
        ],
    )
    def test_variable_parts_become_stars(self, key: bytes, pattern: str):
        assert pattern_of(key) == pattern

    def test_long_keys_are_cut(self):
        assert pattern_of(b"k:" + b"a" * 500) == "k:" + "a" * (MAX_PATTERN_CHARS - 2) + "…"

    def test_undecodable_bytes_are_escaped(self):
        assert pattern_of(b"bin:\xff\xfe:7") == "bin:\\xff\\xfe:*"


class TestBuckets:
    @pytest.mark.parametrize(
        ("size", "bucket"),
        [(1, "64"), (64, "64"), (65, "128"), (2**20, "1048576"), (2**20 + 1, "+Inf")],
    )
    def test_upper_bounds(self, size: int, bucket: str):
        assert bucket_of(size) == bucket
