"""What the dataset marks for a version, worked out here from the raw facts with none of
svc_monitor.cve's code: the tests compare the scanner with this."""

import json
from pathlib import Path
from typing import Any

import svc_monitor

SHIPPED = Path(svc_monitor.__file__).parent / "cve" / "dataset.json"
FACTS = Path("/work/shared/data/cve.json")  # the gathered facts the dataset is built from


def raw() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SHIPPED.read_text())
    return document


def _key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def affected_ids(engine: str, version: str) -> set[str]:
    """Server advisories with a range introduced <= version < fixed (or no fix yet)."""
    v = _key(version)
    return {
        a["id"]
        for a in raw()["advisories"]
        if a["engine"] == engine
        and a["component"] == "server"
        and any(
            _key(r["introduced"]) <= v and (r["fixed"] is None or v < _key(r["fixed"]))
            for r in a["affected"]
        )
    }


def module_ids(engine: str) -> set[str]:
    return {
        a["id"] for a in raw()["advisories"] if a["engine"] == engine and a["component"] != "server"
    }
