"""Links that keep a page's filters: its query string with some values changed."""

from urllib.parse import urlencode


def filter_query(values: dict[str, str], changes: dict[str, object]) -> str:
    """`values` with `changes` applied, empty ones (and page 0) left out of the query."""
    merged = {**values, **{k: "" if v is None else str(v) for k, v in changes.items()}}
    if merged.get("page") == "0":
        merged["page"] = ""
    return urlencode({k: v for k, v in merged.items() if v})
