"""The licence state kept in SVC_DATA_DIR, every file written with mode 0600.

    license.jwt          the last online token: {"keyFingerprint", "token", "checkedAt"}
    license-offline.jwt  an activated offline token (or SVC_OFFLINE_LICENSE_FILE)
    license-clock.json   the latest wall-clock time seen: {"lastSeenMs"}

Writes go to a temporary file in the same directory and are renamed over the old
one, so a crash mid-write never leaves half a token behind.
"""

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ONLINE_FILE = "license.jwt"
OFFLINE_FILE = "license-offline.jwt"
CLOCK_FILE = "license-clock.json"
# Files are read whole; nothing we write comes near this.
MAX_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class PersistedToken:
    key_fingerprint: str
    token: str
    checked_at_ms: int


def key_fingerprint(key: str) -> str:
    """Which licence key a persisted token belongs to, without storing the key."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


class LicenseFiles:
    def __init__(self, data_dir: Path, offline_file: Path) -> None:
        self.data_dir = data_dir
        self.offline_file = offline_file

    # --- the persisted online token ---

    def read_online(self) -> PersistedToken | None:
        data = self._read_json(self.data_dir / ONLINE_FILE)
        if not isinstance(data, dict):
            return None
        fingerprint, token, checked = (
            data.get("keyFingerprint"),
            data.get("token"),
            data.get("checkedAt"),
        )
        if isinstance(fingerprint, str) and isinstance(token, str) and isinstance(checked, int):
            return PersistedToken(fingerprint, token, checked)
        return None

    def write_online(self, persisted: PersistedToken) -> None:
        body = {
            "keyFingerprint": persisted.key_fingerprint,
            "token": persisted.token,
            "checkedAt": persisted.checked_at_ms,
        }
        self._write(self.data_dir / ONLINE_FILE, json.dumps(body))

    def remove_online(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / ONLINE_FILE).unlink()

    # --- the offline token ---

    def read_offline(self) -> str | None:
        text = self._read_text(self.offline_file)
        return text.strip() if text and text.strip() else None

    def write_offline(self, token: str) -> None:
        self._write(self.offline_file, token.strip() + "\n")

    def remove_offline(self) -> bool:
        try:
            self.offline_file.unlink()
        except FileNotFoundError:
            return False
        return True

    # --- the clock ---

    def read_clock(self) -> int | None:
        data = self._read_json(self.data_dir / CLOCK_FILE)
        seen = data.get("lastSeenMs") if isinstance(data, dict) else None
        return seen if isinstance(seen, int) and not isinstance(seen, bool) else None

    def write_clock(self, last_seen_ms: int) -> None:
        self._write(self.data_dir / CLOCK_FILE, json.dumps({"lastSeenMs": last_seen_ms}))

    # --- plumbing ---

    def _read_json(self, path: Path) -> object:
        text = self._read_text(path)
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            logger.warning("%s is not valid JSON; ignoring it", path)
            return None

    def _read_text(self, path: Path) -> str | None:
        try:
            with path.open("rb") as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("cannot read %s: %s", path, exc.strerror or exc)
            return None
        if len(raw) > MAX_FILE_BYTES:
            logger.warning("%s is larger than %d bytes; ignoring it", path, MAX_FILE_BYTES)
            return None
        return raw.decode("utf-8", errors="replace")

    def _write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise
