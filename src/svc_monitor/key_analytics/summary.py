"""From sampled keys to a run's figures: patterns, size buckets, largest and hottest keys.

Scaling: a sample of n keys from a keyspace of N (DBSIZE) stands for N keys, so every
count and memory total of a pattern or bucket is its sampled figure times N / n (SCAN
visits hash buckets in an order unrelated to key names, so a sample is a fair cut).
Averages and maxima are the sample's own. A cluster run samples each shard apart
(summarise_parts): each shard's keys are scaled by its own DBSIZE / its sample, and the
figures are the sums over shards, so a shard read less than its share (time budget) is
still scaled to its own size rather than to the cluster's.

Patterns are bounded: the MAX_PATTERNS holding most memory are kept, the rest are
merged into one OTHER row, so a keyspace of random names cannot flood the store, the
page or the Prometheus series.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from svc_monitor.key_analytics.key_patterns import bucket_of, pattern_of
from svc_monitor.key_analytics.models import KeySample, PatternStats, RankedKey, SizeBucket

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
    """The figures of one server's sample, scaled to its DBSIZE."""
    return summarise_parts([(samples, keyspace_keys)])


def summarise_parts(parts: Sequence[tuple[Sequence[KeySample], int]]) -> Figures:
    """The figures of several samples (a cluster's shards), each (samples, its DBSIZE)."""
    weighted = [
        (sample, keyspace_keys / len(samples))
        for samples, keyspace_keys in parts
        if samples
        for sample in samples
    ]
    groups: dict[str, list[tuple[KeySample, float]]] = defaultdict(list)
    for sample, scale in weighted:
        groups[pattern_of(sample.key)].append((sample, scale))
    ranked = sorted(groups.items(), key=lambda g: (-_scaled_memory(g[1]), g[0]))
    kept = [_pattern(name, members) for name, members in ranked[:MAX_PATTERNS]]
    rest = [m for _, members in ranked[MAX_PATTERNS:] for m in members]
    if rest:
        kept.append(_pattern(OTHER, rest))
    samples = [s for s, _ in weighted]
    largest = sorted(samples, key=lambda s: (-s.memory_bytes, s.key))[:TOP_KEYS]
    with_freq = [s for s in samples if s.freq is not None and s.freq > 0]
    hottest = sorted(with_freq, key=lambda s: (-(s.freq or 0), s.key))[:TOP_KEYS]
    return Figures(tuple(kept), _buckets(weighted), tuple(largest), tuple(hottest))


def _scaled_memory(members: list[tuple[KeySample, float]]) -> float:
    return sum(s.memory_bytes * scale for s, scale in members)


def _pattern(name: str, members: list[tuple[KeySample, float]]) -> PatternStats:
    memory = sum(s.memory_bytes for s, _ in members)
    ttls = [s.ttl_ms for s, _ in members if s.ttl_ms is not None]
    return PatternStats(
        pattern=name,
        key_count=round(sum(scale for _, scale in members)),
        sampled_key_count=len(members),
        keys_with_ttl=len(ttls),
        total_memory_bytes=round(_scaled_memory(members)),
        sampled_memory_bytes=memory,
        avg_memory_bytes=memory / len(members),
        max_memory_bytes=max(s.memory_bytes for s, _ in members),
        avg_ttl_seconds=sum(ttls) / len(ttls) / 1000 if ttls else None,
        types=dict(Counter(s.type for s, _ in members)),
    )


def _buckets(weighted: Iterable[tuple[KeySample, float]]) -> tuple[SizeBucket, ...]:
    counts: Counter[tuple[str, str]] = Counter()
    keys: dict[tuple[str, str], float] = defaultdict(float)
    for sample, scale in weighted:
        bucket = (sample.type, bucket_of(sample.memory_bytes))
        counts[bucket] += 1
        keys[bucket] += scale
    return tuple(
        SizeBucket(type=kind, bucket=bucket, sampled_keys=n, keys=round(keys[(kind, bucket)]))
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
