import pytest

from svc_monitor.kit.versions import is_newer, release_parts, server_version


class TestOrdering:
    def test_release_candidates_order_before_their_release(self):
        versions = [server_version(v) for v in ("8.0.0-rc1", "8.0.0-rc2", "8.0.0", "8.0.1")]
        assert None not in versions
        assert versions == sorted(versions)  # type: ignore[type-var]
        assert len(set(versions)) == 4  # rc1 and rc2 are not the same version

    def test_numbers_compare_as_numbers_not_text(self):
        assert is_newer("9.1.10", "9.1.9")
        assert is_newer("10.0.0", "9.9.9")

    def test_a_redis_milestone_orders_before_the_release_it_leads_to(self):
        # redis:8.0-M02 reports redis_version:7.9.225.
        assert is_newer("8.0.0", "7.9.225")
        assert is_newer("7.9.225", "7.4.6")

    def test_valkey_unstable_orders_after_every_release(self):
        assert is_newer("255.255.255", "9.1.2")

    def test_missing_parts_are_zero(self):
        assert server_version("7.2") == server_version("7.2.0")


class TestNotAVersion:
    @pytest.mark.parametrize(
        "text",
        [
            pytest.param("", id="empty"),
            pytest.param("seven", id="word"),
            pytest.param("7.2.x", id="letter-part"),
            pytest.param("-1.2.3", id="negative"),
            pytest.param("9" * 5000, id="longer-than-int-parses"),
            pytest.param("\u0667.0.0", id="non-ascii-digit"),
        ],
    )
    def test_gets_a_defined_answer(self, text: str):
        assert server_version(text) is None
        assert release_parts(text) == (0, 0, 0)
        assert not is_newer(text, "1.0.0")
        assert not is_newer("1.0.0", text)


class TestReleaseParts:
    @pytest.mark.parametrize(
        ("text", "parts"),
        [
            pytest.param("8.1.0-rc1", (8, 1, 0), id="pre-release-counts-as-its-release"),
            pytest.param("7", (7, 0, 0), id="major-only"),
            pytest.param("1.2.3.4", (1, 2, 3), id="four-parts"),
        ],
    )
    def test_major_minor_patch(self, text: str, parts: tuple[int, int, int]):
        assert release_parts(text) == parts
