"""Text that names something (a connection, a host, a user, a file): printable only.

A NUL byte is refused by PostgreSQL, stored by SQLite and cut off by the C libraries a
host name or a file path reaches (`127.0.0.1\\0evil` dials 127.0.0.1); a newline or an
escape forges log lines and breaks Prometheus labels. None of them belongs in a name,
so each is refused at the edge with a 422 naming the field.
"""

from typing import Annotated

from pydantic import AfterValidator


def printable(value: str) -> str:
    """`value`, if it holds no control character (tab included); else ValueError."""
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        raise ValueError("must not contain control characters (NUL, newline, tab, escape ...)")
    return value


Printable = Annotated[str, AfterValidator(printable)]
