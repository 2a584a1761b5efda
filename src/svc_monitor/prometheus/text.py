"""The Prometheus text format (0.0.4) of already-built families, written for speed.

prometheus_client's `generate_latest` re-validates and re-escapes every name and label
on every line; at 100 connections (about 10,000 lines) that alone was 25 ms of a 40 ms
scrape. Our names and label names are fixed ASCII from the catalogue, so only label
values (which come from servers: patterns, client names, users) need escaping, and only
when they hold a backslash, quote or newline. The output is the same text
`generate_latest` gives for these families, up to number spelling (tested); OpenMetrics-only samples
(`_created`, `_gsum`, `_gcount`) are never produced here and are left out.
"""

from collections.abc import Iterable, Iterator
from functools import lru_cache
from math import isinf, isnan

from prometheus_client.metrics_core import Metric

from svc_monitor.prometheus.catalogue import sample_names
from svc_monitor.prometheus.collector import Rows

_TYPE_NAMES = {"info": "gauge", "stateset": "gauge", "unknown": "untyped"}
_SKIPPED_SUFFIXES = ("_created", "_gsum", "_gcount")
# Lines of one family written between two chances to give the event loop back: the
# commandstats families hold ~30 lines per connection, 30,000 at a thousand connections,
# which took 50-65 ms each to write in one go.
LINES_PER_STEP = 2_000


def render(families: Iterable[Rows | Metric]) -> bytes:
    out: list[str] = []
    for family in families:
        write(family, out)
    return "".join(out).encode()


def write(family: Rows | Metric, out: list[str]) -> None:
    """One family's lines, appended to `out`."""
    for _ in write_in_steps(family, out):
        pass


def write_in_steps(family: Rows | Metric, out: list[str]) -> Iterator[None]:
    """Appends one family's lines to `out`, pausing (yielding) every LINES_PER_STEP lines
    so that the caller may give the event loop back between them."""
    if isinstance(family, Rows):
        yield from _rows(family, out)
        return
    append = out.append
    name, kind = family.name, family.type
    if kind == "counter":
        name += "_total"
    elif kind == "info":
        name += "_info"
    help_text = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
    append(f"# HELP {name} {help_text}\n# TYPE {name} {_TYPE_NAMES.get(kind, kind)}\n")
    skipped = tuple(family.name + suffix for suffix in _SKIPPED_SUFFIXES)
    for sample in family.samples:
        if sample.name in skipped:
            continue
        labels = sample.labels
        if labels:
            pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            append(f"{sample.name}{{{pairs}}} {_number(sample.value)}\n")
        else:
            append(f"{sample.name} {_number(sample.value)}\n")


def _rows(rows: Rows, out: list[str]) -> Iterator[None]:
    spec = rows.family
    name = sample_names(spec)[0]
    help_text = spec.help.replace("\\", r"\\").replace("\n", r"\n")
    out.append(f"# HELP {name} {help_text}\n# TYPE {name} {spec.kind}\n")
    keys, values = rows.keys, rows.values
    names = ("connection", *spec.labels)
    for start in range(0, len(values), LINES_PER_STEP):
        end = start + LINES_PER_STEP
        if rows.single:  # most families: one label, the connection's host:port
            out.extend(
                f"{name}{_connection_label(k)}{_number(n)}\n"
                for k, n in zip(keys[start:end], values[start:end], strict=True)
            )
        elif len(names) == 2:  # the connection and one more: commands, databases, users
            second = names[1]
            out.extend(
                f'{name}{{{_connection_pair(k[0])},{second}="{_escape(k[1])}"}} {_number(n)}\n'
                for k, n in zip(keys[start:end], values[start:end], strict=True)
            )
        else:
            for labels, value in zip(keys[start:end], values[start:end], strict=True):
                pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in zip(names, labels, strict=True))
                out.append(f"{name}{{{pairs}}} {_number(value)}\n")
        yield


# The same few thousand addresses label every line of a scrape, ~80 lines each: each
# address is escaped and formatted once, not once a line. With the rows' plain lists that
# halved the writer's time: a thousand connections' INFO and commandstats families, 46,060
# lines, in 22 ms rather than 38 (bench/prometheus.py, "text writer alone").
@lru_cache(maxsize=8192)
def _connection_label(address: str) -> str:
    """`{connection="host:port"} `, escaped."""
    return f'{{connection="{_escape(address)}"}} '


@lru_cache(maxsize=8192)
def _connection_pair(address: str) -> str:
    """`connection="host:port"`, escaped."""
    return f'connection="{_escape(address)}"'


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


_NOT_FINITE = {"inf": "+Inf", "-inf": "-Inf", "nan": "NaN"}


def _number(value: float) -> str:
    if type(value) is float:  # nearly every value: one repr, and a lookup for inf and nan
        text = repr(value)
        return _NOT_FINITE.get(text, text)
    if type(value) is int:
        return f"{value}.0"  # as generate_latest writes it, so both texts match
    if isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if isnan(value):
        return "NaN"
    return repr(float(value))
