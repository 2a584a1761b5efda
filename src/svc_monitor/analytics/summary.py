"""From sampled keys to a run's figures: patterns, size buckets, largest and hottest keys.

Scaling: a sample of n keys from a keyspace of N (DBSIZE) stands for N keys, so every
count and memory total of a pattern or bucket is its sampled figure times N / n (SCAN
visits hash buckets in an order unrelated to key names, so a sample is a fair cut).
Averages and maxima are the sample's own.

Patterns are bounded: the MAX_PATTERNS holding most memory are kept, the rest are
merged into one OTHER row, so a keyspace of random names cannot flood the store, the
page or the Prometheus series.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from svc_monitor.analytics.models import KeySample, PatternStats, RankedKey, SizeBucket
from svc_monitor.analytics.patterns import bucket_of, pattern_of

MAX_PATTERNS = 50
OTHER = "(other)"
TOP_KEYS = 20


@dataclass(frozen=True, slots=True)
class Figures:
    patterns: tuple[PatternStats, ...]
    size_buckets: tuple[SizeBucket, ...]
    largest: tuple[KeySample, ...]
    hottest: tuple[KeySample, ...]


def summarise(samples: Sequence[KeySample], *, keyspace_keys: int) -> Figures:
    scale = keyspace_keys / len(samples) if samples else 0.0
    groups: dict[str, list[KeySample]] = defaultdict(list)
    for sample in samples:
        groups[pattern_of(sample.key)].append(sample)
    ranked = sorted(groups.items(), key=lambda g: (-sum(s.memory_bytes for s in g[1]), g[0]))
    kept = [_pattern(name, members, scale) for name, members in ranked[:MAX_PATTERNS]]
    rest = [s for _, members in ranked[MAX_PATTERNS:] for s in members]
    if rest:
        kept.append(_pattern(OTHER, rest, scale))
    largest = sorted(samples, key=lambda s: (-s.memory_bytes, s.key))[:TOP_KEYS]
    with_freq = [s for s in samples if s.freq is not None and s.freq > 0]
    hottest = sorted(with_freq, key=lambda s: (-(s.freq or 0), s.key))[:TOP_KEYS]
    return Figures(tuple(kept), _buckets(samples, scale), tuple(largest), tuple(hottest))


def _pattern(name: str, members: list[KeySample], scale: float) -> PatternStats:
    memory = sum(s.memory_bytes for s in members)
    ttls = [s.ttl_ms for s in members if s.ttl_ms is not None]
    return PatternStats(
        pattern=name,
        key_count=round(len(members) * scale),
        sampled_key_count=len(members),
        keys_with_ttl=len(ttls),
        total_memory_bytes=round(memory * scale),
        sampled_memory_bytes=memory,
        avg_memory_bytes=memory / len(members),
        max_memory_bytes=max(s.memory_bytes for s in members),
        avg_ttl_seconds=sum(ttls) / len(ttls) / 1000 if ttls else None,
        types=dict(Counter(s.type for s in members)),
    )


def _buckets(samples: Iterable[KeySample], scale: float) -> tuple[SizeBucket, ...]:
    counts = Counter((s.type, bucket_of(s.memory_bytes)) for s in samples)
    return tuple(
        SizeBucket(type=kind, bucket=bucket, sampled_keys=n, keys=round(n * scale))
        for (kind, bucket), n in sorted(counts.items(), key=lambda c: (c[0][0], _bound(c[0][1])))
    )


def _bound(bucket: str) -> float:
    return float("inf") if bucket == "+Inf" else float(bucket)


def ranked(sample: KeySample, *, cardinality: int | None = None) -> RankedKey:
    return RankedKey(
        key=sample.key.decode("utf-8", errors="backslashreplace"),
        type=sample.type,
        memory_bytes=sample.memory_bytes,
        ttl_ms=sample.ttl_ms,
        freq=sample.freq,
        cardinality=cardinality,
    )
