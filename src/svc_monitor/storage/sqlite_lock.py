"""One svc-monitor per SQLite file.

SQLite storage serves a single process: replicas need what only a database server gives
them (PostgreSQL, or Turso). Two processes on one file would each poll every connection,
send every event twice and interleave their retention runs, so the second one refuses to
start instead. The guard is an exclusive `flock` on a lock file beside the database
(`<file>.lock`, holding the owner's pid for the message), as Prometheus guards its data
directory: the kernel lets it go when the process ends, however it ends, so a crash
never leaves a stale lock behind. It is a file of its own because closing any descriptor
of the database file itself would drop the POSIX locks SQLite holds on it.
"""

import contextlib
import fcntl
import os
from pathlib import Path


class SqliteFileInUse(Exception):
    """Another process holds the SQLite file; the message is one line for the operator."""


class SqliteFileLock:
    """Held from `acquire` until `release` (or the end of the process)."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.path = database.with_name(database.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise SqliteFileInUse naming the holder."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            by = f"another svc-monitor (pid {holder})" if holder else "another svc-monitor"
            raise SqliteFileInUse(
                f"The SQLite file {self.database} is in use by {by}. SQLite storage serves "
                "one process: stop the other one, or run several replicas on PostgreSQL "
                "(STORAGE_TYPE=postgres)."
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor ends the flock


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
