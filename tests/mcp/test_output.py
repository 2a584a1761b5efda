"""Bounded tool output: a long list or text is cut, and says how much was left out."""

from svc_monitor.mcp.output import cap, iso, listing, mb


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
