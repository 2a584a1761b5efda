"""Links that keep a page's filters: its query string with some values changed, and the
custom From/To window a list page may carry in it."""

from urllib.parse import urlencode


def filter_query(values: dict[str, str], changes: dict[str, object]) -> str:
    """`values` with `changes` applied, empty ones (and page 0) left out of the query."""
    merged = {**values, **{k: "" if v is None else str(v) for k, v in changes.items()}}
    if merged.get("page") == "0":
        merged["page"] = ""
    return urlencode({k: v for k, v in merged.items() if v})


def custom_window(since: str | None, until: str | None) -> tuple[int, int] | None:
    """The From/To of a list's query (epoch ms, as app.js sends them), or None when either
    is missing or unusable or From is not before To: the page then uses its preset."""
    start, end = _epoch_ms(since), _epoch_ms(until)
    if start is None or end is None or start >= end:
        return None
    return start, end


def _epoch_ms(text: str | None) -> int | None:
    text = (text or "").strip()
    # 15 digits reach the year 33658: anything longer is not a time.
    return int(text) if text.isdigit() and len(text) <= 15 else None
