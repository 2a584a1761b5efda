"""Version matching against the shipped dataset, checked against the raw facts."""

import json
from datetime import date

import pytest

from svc_monitor.cve.dataset import (
    DatasetInvalid,
    UnreadableVersion,
    parse_dataset,
    scan,
    shipped_dataset,
    version_key,
)
from tests.cve.expected import FACTS, affected_ids, module_ids, raw

TODAY = date(2026, 11, 25)


def ids(engine: str, version: str) -> set[str]:
    result = scan(shipped_dataset(), engine, version, today=TODAY)  # type: ignore[arg-type]
    return {f.id for f in result.findings if f.kind != "end_of_life"}


class TestShippedDataset:
    def test_holds_every_gathered_advisory(self):
        dataset = shipped_dataset()
        assert len(dataset.advisories) == 86  # 84 CVEs and 2 GHSA-only advisories
        assert sum(a.kind == "advisory" for a in dataset.advisories) == 2

    @pytest.mark.skipif(not FACTS.exists(), reason="the gathered facts are not on this machine")
    def test_is_the_gathered_facts_unchanged(self):
        facts = json.loads(FACTS.read_text())
        every = [*facts["advisories"], *facts["non_cve_advisories"]]
        gathered = {(a["engine"], a["id"]): a for a in every}
        shipped = {(a["engine"], a["id"]): a for a in raw()["advisories"]}
        assert shipped.keys() == gathered.keys()
        for key, advisory in shipped.items():
            source = gathered[key]
            for field, value in advisory.items():
                assert source[field] == value, (key, field)

    def test_every_end_of_life_line_names_its_source(self):
        dataset = shipped_dataset()
        engines = {c.engine for c in dataset.eol_cycles}
        assert engines == {"redis", "valkey"}
        assert all("endoflife.date" in dataset.eol_sources[e] for e in engines)


class TestMatching:
    def test_redis_6_2_5_lists_what_the_dataset_marks_for_it(self):
        expected = affected_ids("redis", "6.2.5")
        assert len(expected) > 10
        assert ids("redis", "6.2.5") == expected

    def test_valkey_9_1_2_lists_nothing_fixed_by_9_1_2(self):
        result = scan(shipped_dataset(), "valkey", "9.1.2", today=TODAY)
        for finding in result.findings:
            assert finding.fixed_in is None or version_key(finding.fixed_in) > version_key("9.1.2")
        # the two 9.1 advisories fixed in 9.1.2 are gone, and were there in 9.1.1
        assert {"GHSA-fq2f-crmw-q97r", "GHSA-jcj7-v34w-v9vv"} <= ids("valkey", "9.1.1")
        assert ids("valkey", "9.1.2") == affected_ids("valkey", "9.1.2")

    def test_valkey_is_never_matched_on_redis_advisories(self):
        # A CVE of both engines has a range per engine; a Valkey takes only Valkey's.
        redis_only = affected_ids("redis", "7.2.4") - affected_ids("valkey", "7.2.4")
        assert redis_only
        assert ids("valkey", "7.2.4") == affected_ids("valkey", "7.2.4")
        assert not ids("valkey", "7.2.4") & redis_only

    def test_module_advisories_are_unverifiable_not_findings(self):
        result = scan(shipped_dataset(), "redis", "6.2.5", today=TODAY)
        assert {a.id for a in result.unverifiable} == module_ids("redis")
        assert not {f.id for f in result.findings} & module_ids("redis")

    def test_a_range_without_a_fix_matches_every_later_version(self):
        assert "CVE-2026-62356" not in ids("redis", "99.0.0")  # a module's: unverifiable
        unfixed = {
            a["id"]
            for a in raw()["advisories"]
            if a["component"] == "server" and any(r["fixed"] is None for r in a["affected"])
        }
        for advisory_id in unfixed:
            engine = next(a["engine"] for a in raw()["advisories"] if a["id"] == advisory_id)
            assert advisory_id in ids(engine, "99.0.0")

    def test_a_pre_release_sorts_before_its_release(self):
        assert version_key("8.0.0-rc1") < version_key("8.0.0-rc2") < version_key("8.0.0")
        assert version_key("8.0.0") < version_key("8.0.1")
        assert version_key("7.2") == version_key("7.2.0")

    @pytest.mark.parametrize(
        ("version", "affected"),
        [
            pytest.param("9.0.5", False, id="the-line-before"),
            pytest.param("9.1.0-rc1", False, id="rc-of-introduced"),
            pytest.param("9.1.0", True, id="introduced"),
            pytest.param("9.1.1", True, id="inside"),
            pytest.param("9.1.2-rc1", True, id="rc-of-the-fix"),
            pytest.param("9.1.2", False, id="fixed"),
            pytest.param("9.1.10", False, id="two-digit-patch-after-the-fix"),
        ],
    )
    def test_range_boundaries(self, version: str, affected: bool):
        # GHSA-fq2f-crmw-q97r: introduced 9.1.0, fixed 9.1.2, in Valkey only.
        assert ("GHSA-fq2f-crmw-q97r" in ids("valkey", version)) is affected

    def test_release_candidates_are_told_apart(self):
        # A fix that landed in rc2: rc1 has the flaw, rc2 does not.
        document = raw()
        advisory = {
            **document["advisories"][0],
            "engine": "valkey",
            "component": "server",
            "affected": [{"introduced": "8.0.0-rc1", "fixed": "8.0.0-rc2"}],
        }
        dataset = parse_dataset({**document, "advisories": [advisory]})
        found = {
            v: [
                f.id
                for f in scan(dataset, "valkey", v, today=TODAY).findings
                if f.kind != "end_of_life"
            ]
            for v in ("7.2.8", "8.0.0-rc1", "8.0.0-rc2", "8.0.0")
        }
        assert found == {"7.2.8": [], "8.0.0-rc1": [advisory["id"]], "8.0.0-rc2": [], "8.0.0": []}

    @pytest.mark.parametrize("version", ["seven", "", "9.1.x", "9" * 5000, "\u0667.0.0"])
    def test_an_unreadable_version_is_refused_by_name(self, version: str):
        with pytest.raises(UnreadableVersion):
            scan(shipped_dataset(), "valkey", version, today=TODAY)


class TestEndOfLife:
    def test_a_line_past_its_date_is_a_finding(self):
        result = scan(shipped_dataset(), "redis", "7.0.15", today=TODAY)
        assert result.end_of_life.status == "end_of_life"
        assert result.end_of_life.eol == date(2024, 7, 29)
        eol = [f for f in result.findings if f.kind == "end_of_life"]
        assert [f.id for f in eol] == ["EOL-redis-7.0"]

    def test_a_supported_line_is_not(self):
        result = scan(shipped_dataset(), "valkey", "8.0.1", today=TODAY)
        assert result.end_of_life.status == "supported"
        assert result.end_of_life.eol == date(2027, 9, 15)
        assert not [f for f in result.findings if f.kind == "end_of_life"]

    def test_a_line_without_a_sourced_date_is_unknown(self):
        result = scan(shipped_dataset(), "valkey", "9.1.2", today=TODAY)
        assert result.end_of_life.status == "unknown"


class TestParsing:
    @pytest.mark.parametrize(
        "document",
        [
            pytest.param({}, id="empty"),
            pytest.param([], id="not-an-object"),
            pytest.param({**raw(), "format": 2}, id="unknown-format"),
            pytest.param({**raw(), "advisories": []}, id="no-advisories"),
            pytest.param(
                {**raw(), "advisories": [{**raw()["advisories"][0], "severity": "urgent"}]},
                id="bad-severity",
            ),
            pytest.param(
                {
                    **raw(),
                    "advisories": [
                        {**raw()["advisories"][0], "affected": [{"introduced": "x", "fixed": None}]}
                    ],
                },
                id="bad-version",
            ),
        ],
    )
    def test_a_malformed_document_is_refused(self, document: object):
        with pytest.raises(DatasetInvalid):
            parse_dataset(document)
