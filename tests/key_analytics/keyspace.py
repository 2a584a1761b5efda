"""Real keyspaces for key analytics tests: keys in known patterns, loaded in pipelines,
and the independent truth (the sum of MEMORY USAGE over every key, per pattern)."""

import uuid
from collections import defaultdict

from tests.fixtures.servers import RunningServer

CHUNK = 5_000


def pattern_keys(i: int) -> list[tuple[str, str, bytes]]:
    """(pattern, type, key) of the five keys of index i: one per pattern."""
    return [
        ("user:*", "string", f"user:{i}".encode()),
        ("session:*", "hash", f"session:{uuid.UUID(int=i)}".encode()),
        ("cache:page:*", "string", f"cache:page:{i}".encode()),
        ("queue:*:jobs", "list", f"queue:{i}:jobs".encode()),
        ("score:*", "zset", f"score:{i:024x}".encode()),
    ]


def load(server: RunningServer, per_pattern: int, *, ttl_every: int = 4) -> None:
    """`per_pattern` keys in each of 5 patterns, of varied sizes; every `ttl_every`th
    user:* key expires in an hour."""
    with server.client() as client:
        for start in range(0, per_pattern, CHUNK):
            pipe = client.pipeline(transaction=False)
            for i in range(start, min(start + CHUNK, per_pattern)):
                user, session, page, queue, score = (k for _, _, k in pattern_keys(i))
                pipe.set(user, "u" * (10 + i % 40), ex=3600 if i % ttl_every == 0 else None)
                pipe.hset(session, mapping={"uid": i, "ip": "10.0.0.1", "agent": "x" * (i % 30)})
                pipe.set(page, "p" * (200 + i % 300))
                pipe.rpush(queue, *[f"job-{j}" for j in range(1 + i % 5)])
                pipe.zadd(score, {f"m{j}": j for j in range(1 + i % 3)})
            pipe.execute()


def memory_truth(server: RunningServer) -> dict[str, int]:
    """The sum of MEMORY USAGE over every key, by its pattern (from the key's name)."""
    by_pattern: dict[str, int] = defaultdict(int)
    with server.client(decode_responses=False) as client:
        keys = list(client.scan_iter(count=5_000))
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            pipe = client.pipeline(transaction=False)
            for key in chunk:
                pipe.memory_usage(key)
            for key, size in zip(chunk, pipe.execute(), strict=True):
                by_pattern[_pattern(key)] += int(size)
    return dict(by_pattern)


def _pattern(key: bytes) -> str:
    name = key.decode()
    if name.startswith("queue:"):
        return "queue:*:jobs"
    if name.startswith("cache:page:"):
        return "cache:page:*"
    return name.split(":", 1)[0] + ":*"
