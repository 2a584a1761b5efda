"""Copies a SQLite file's write-ahead log back into the database, off the write path.

With SQLite's default, the connection whose commit takes the WAL past 1,000 pages
runs the checkpoint inside that commit: every write waits for it, the storage thread
included, and a checkpoint is a third of commit time under a steady span stream
(bench/otlp_ingest.py: 44,000 spans/s with it in the commit, 50,000 with it here).
This thread checkpoints every `interval` seconds on a connection of its own instead;
SQLite runs a PASSIVE checkpoint beside readers and the writer, and releases the GIL
while it copies, so the copy overlaps the event loop's work too.

The writer keeps a larger automatic checkpoint (`BACKSTOP_PAGES`) in case this thread
falls behind, so the WAL file stays bounded either way.
"""

import logging
import sqlite3
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

INTERVAL_SECONDS = 1.0
# ~80 MB of 4 KiB pages: a few seconds of the heaviest write load measured.
BACKSTOP_PAGES = 20_000


class WalCheckpointer:
    """A daemon thread checkpointing the WAL of the SQLite file at `path`."""

    def __init__(self, path: Path, *, interval: float = INTERVAL_SECONDS) -> None:
        self._path = path
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="svc-wal-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        connection = sqlite3.connect(self._path)
        try:
            while not self._stopping.wait(self._interval):
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    # The writer's backstop checkpoint still bounds the WAL.
                    logger.warning("WAL checkpoint of %s failed: %s", self._path, exc)
        finally:
            connection.close()
