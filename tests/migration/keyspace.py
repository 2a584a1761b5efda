"""Keyspaces for the migration tests: every type, with TTLs, in several databases, a
stream with a consumer group, a function library; hash-field TTLs and a module-typed key
where the server has them."""

from dataclasses import dataclass
from typing import Any

from tests.fixtures.servers import RunningServer

LIBRARY = """#!lua name=inventory
redis.register_function('stock', function(keys, args) return redis.call('GET', keys[1]) end)
"""


@dataclass(frozen=True)
class Loaded:
    keys: dict[int, int]  # keys per database


def load(
    server: RunningServer,
    per_type: int,
    *,
    databases: tuple[int, ...] = (0, 1),
    functions: bool = True,
    field_ttls: bool = False,
    module_key: bool = False,
) -> Loaded:
    """`per_type` keys of each of the six types in each database, every third with a TTL
    of an hour; plus the extras asked for."""
    counts: dict[int, int] = {}
    for db in databases:
        client: Any = server.client(db=db)
        pipe: Any = client.pipeline(transaction=False)
        for i in range(per_type):
            ttl = 3_600_000 if i % 3 == 0 else None
            names = [f"s:{i}", f"h:{i}", f"l:{i}", f"set:{i}", f"z:{i}", f"x:{i}"]
            pipe.set(names[0], f"value-{i}" * 4)
            pipe.hset(names[1], mapping={"a": i, "b": f"b{i}", "c": "x" * 20})
            pipe.rpush(names[2], *[f"e{j}" for j in range(5)])
            pipe.sadd(names[3], *[f"m{j}" for j in range(5)])
            pipe.zadd(names[4], {f"m{j}": j * 1.5 for j in range(5)})
            pipe.xadd(names[5], {"f": i})
            if ttl:
                for name in names:
                    pipe.pexpire(name, ttl)
            if i % 500 == 499:
                pipe.execute()
        pipe.execute()
        client.xgroup_create("x:0", "workers", id="0")
        client.xreadgroup("workers", "alice", {"x:0": ">"}, count=1)
        counts[db] = per_type * 6
        if field_ttls and db == 0:
            client.execute_command("HEXPIRE", "h:1", 3600, "FIELDS", 1, "a")
        if module_key and db == 0:
            client.execute_command("FT.SUGADD", "suggest", "hello world", 1)
            counts[db] += 1
        client.close()
    if functions:
        server.client().function_load(LIBRARY)
    return Loaded(counts)
