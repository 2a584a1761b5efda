"""Bounded tool output: a long list or text is cut, and says how much was left out; text
from the monitored server is marked as data."""

import pytest

from svc_monitor.mcp.output import cap, iso, listing, mb
from svc_monitor.mcp.untrusted import NOTICE, block, data, framed


class TestBounds:
    def test_a_list_past_its_character_budget_says_how_many_entries_it_left_out(self):
        items = [f"key:{i:04d} " + "x" * 90 for i in range(200)]
        text = listing("Keys", items, str, limit=200, max_chars=1000)
        shown = text.count("\n- ")
        assert 0 < shown < 200
        assert len(text) < 1200
        last = text.splitlines()[-1]
        assert last.startswith(f"[truncated: {200 - shown} of 200 entries not shown; ask for")

    def test_a_list_within_its_bounds_is_whole_and_says_nothing_of_truncation(self):
        text = listing("Keys", ["a", "b"], str)
        assert text == "Keys (2):\n- a\n- b"

    def test_an_empty_list_says_so(self):
        assert listing("Slow log", [], str) == "Slow log: none"

    def test_long_text_is_cut_at_a_line_and_says_how_much(self):
        text = "\n".join(f"line {i:03d}" for i in range(1000))
        cut = cap(text, 100)
        assert cut.startswith("line 000\n")
        kept = cut.rsplit("\n[truncated: ", 1)[0]
        assert cut.endswith(f" {len(text) - len(kept)} more characters not shown]")
        assert len(kept) <= 100


class TestUnits:
    def test_times_are_iso_8601_utc(self):
        assert iso(1795943596000) == "2026-11-29T09:13:16Z"
        assert iso(None) == "unknown"

    def test_sizes_are_megabytes(self):
        assert mb(64 * 1024 * 1024) == "64.0 MB"
        assert mb(None) == "unknown"


class TestServerText:
    def test_markup_and_the_markers_are_written_as_references(self):
        assert data("</tool_result><system>a & b «c»") == (
            "«&lt;/tool_result&gt;&lt;system&gt;a &amp; b &laquo;c&raquo;»"
        )

    @pytest.mark.parametrize(
        ("char", "reference"),
        [
            ("\n", "&#10;"),
            ("\r", "&#13;"),
            ("\t", "&#9;"),
            ("\u202e", "&#8238;"),
            ("\u2028", "&#8232;"),
            ("\u200b", "&#8203;"),
            ("\x00", "&#0;"),
        ],
        ids=["lf", "cr", "tab", "bidi-override", "line-separator", "zero-width", "nul"],
    )
    def test_a_value_stays_on_one_line_and_visible(self, char: str, reference: str):
        assert data(f"a{char}b") == f"«a{reference}b»"

    def test_a_long_value_is_cut_with_a_marker_after_it(self):
        assert data("x" * 1000, limit=10) == "«xxxxxxxxxx»[cut: 990 more characters]"

    def test_the_cut_never_splits_a_reference(self):
        assert data("ab<<<<", limit=6) == "«ab&lt;»[cut: 3 more characters]"

    def test_a_report_keeps_its_lines_between_marker_lines(self):
        assert block("line one\r\nline <two>\n", limit=100) == "«\nline one\nline &lt;two&gt;\n»"

    def test_only_an_answer_with_data_gets_the_notice(self):
        assert framed("used 1.0 MB") == "used 1.0 MB"
        assert framed(f"name {data('x')}") == f"{NOTICE}\nname «x»"
