"""A cluster run's pure parts: the sample split across shards, and the sources named.

The split: KEY_ANALYTICS_SAMPLE_SIZE is the whole cluster's, shared out in proportion to
each shard's DBSIZE (largest remainders, so the shares add up to the setting exactly),
after one key for every shard that has keys. Proportional rather than even because then
every key of the cluster has the same chance to be sampled, wherever it lives: the
merged sample is a fair cut of the cluster, every shard's scale factor (DBSIZE / share)
is about the same, and averages, maxima, size buckets and the largest and hottest keys
are not tilted towards a small shard (an even split would sample a near-empty shard's
keys many times more often and blow a big shard's few samples up). The one-key floor
keeps a nearly empty shard's patterns from vanishing altogether.

The sources: a run's `source` column (300 characters, no migration) names every node a
cluster run read, `host:port, host:port`; past what fits, the rest are counted as
`+N more`. nodes_in reads the count back.
"""

from collections.abc import Sequence

SOURCE_CHARS = 300
SEPARATOR = ", "


def split_sample(total: int, sizes: Sequence[int]) -> list[int]:
    """Each shard's share of `total` sampled keys, by its DBSIZE in `sizes` (module rule)."""
    shares = [0] * len(sizes)
    filled = sorted((i for i, n in enumerate(sizes) if n > 0), key=lambda i: (-sizes[i], i))
    for i in filled[:total]:
        shares[i] = 1
    left = total - sum(shares)
    keys = sum(sizes)
    if left <= 0 or keys == 0:
        return shares
    exact = [left * n / keys for n in sizes]
    for i, value in enumerate(exact):
        shares[i] += int(value)
    rest = left - sum(int(v) for v in exact)
    by_remainder = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - int(exact[i])), i))
    for i in by_remainder[:rest]:
        shares[i] += 1
    return shares


def join_sources(addresses: Sequence[str]) -> str:
    """`a, b, c`, cut to SOURCE_CHARS with the addresses left out counted (`a, +2 more`)."""
    joined = SEPARATOR.join(addresses)
    if len(joined) <= SOURCE_CHARS:
        return joined
    for kept in range(len(addresses) - 1, -1, -1):
        text = SEPARATOR.join([*addresses[:kept], f"+{len(addresses) - kept} more"])
        if len(text) <= SOURCE_CHARS:
            return text
    return f"+{len(addresses)} more"


def nodes_in(source: str) -> int:
    """How many nodes a run's `source` names (join_sources read back); 1 for one server."""
    count = 0
    for part in source.split(SEPARATOR):
        if part.startswith("+") and part.endswith(" more") and part[1:-5].isdigit():
            count += int(part[1:-5])
        elif part:
            count += 1
    return max(count, 1)
