"""Build the product's CVE dataset (src/svc_monitor/cve/dataset.json) from the gathered facts.

    python scripts/build_cve_dataset.py [/work/shared/data/cve.json]

Facts only: every advisory is copied as gathered (ids, engine, component, affected ranges,
severity, CVSS, KEV, summary), the advisories without a CVE id included, and the engines'
end-of-life dates per minor version are added from the table below with their source.
A minor version whose date could not be sourced is left out (the scanner then says
"unknown" rather than guessing).
"""

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "src" / "svc_monitor" / "cve" / "dataset.json"
FACTS = Path("/work/shared/data/cve.json")

# endoflife.date's product files, the newest snapshot we could read of each. `eol` null
# means the source lists the line as still supported (no end-of-life date yet).
REDIS_SOURCE = (
    "https://endoflife.date/redis (github.com/endoflife-date/endoflife.date "
    "products/redis.md at 0118c3037fa9f22d86a72e0f4d8f492e45b77234; its 'still supported "
    "according to https://github.com/redis/redis/security' lines have no date)"
)
VALKEY_SOURCE = (
    "https://endoflife.date/valkey (github.com/endoflife-date/endoflife.date "
    "products/valkey.md at 08d4b34155902f7ce8003d9e57db3f100e7420ce; dates from "
    "https://valkey.io/topics/releases/: eol = end of extended security support)"
)
END_OF_LIFE: list[dict[str, Any]] = [
    # engine, minor version, release date, end of active support, end of life
    *(
        {"engine": "redis", "cycle": c, "released": r, "supportEnds": s, "eol": e}
        for c, r, s, e in (
            ("8.6", "2026-02-11", None, None),
            ("8.4", "2025-11-18", "2026-02-11", None),
            ("8.2", "2025-08-04", "2025-11-18", None),
            ("8.0", "2025-05-02", "2025-08-04", "2026-02-11"),
            ("7.4", "2024-07-29", "2025-05-02", None),
            ("7.2", "2023-08-15", "2024-07-29", None),
            ("7.0", "2022-04-27", "2023-08-15", "2024-07-29"),
            ("6.2", "2021-02-22", "2022-04-27", None),
            ("6.0", "2020-04-30", "2021-02-22", "2022-05-31"),
            ("5.0", "2018-10-17", "2020-04-30", "2022-04-27"),
        )
    ),
    *(
        {"engine": "valkey", "cycle": c, "released": r, "supportEnds": s, "eol": e}
        for c, r, s, e in (
            ("9.0", "2025-10-21", "2028-10-21", "2028-10-21"),
            ("8.1", "2025-03-31", "2028-03-31", "2030-03-31"),
            ("8.0", "2024-09-15", "2027-09-15", "2027-09-15"),
            ("7.2", "2023-08-15", "2027-04-16", "2029-04-16"),
        )
    ),
]
ADVISORY_FIELDS = ("id", "ghsa", "engine", "component", "summary", "severity", "cvss", "kev")


def build(facts: dict[str, Any]) -> dict[str, Any]:
    advisories = []
    for raw in [*facts["advisories"], *facts.get("non_cve_advisories", [])]:
        advisory = {k: raw[k] for k in ADVISORY_FIELDS if k in raw}
        advisory["affected"] = [
            {"introduced": r["introduced"], "fixed": r["fixed"]} for r in raw["affected"]
        ]
        advisories.append(advisory)
    return {
        "format": 1,
        "generated": facts["generated"],
        "sources": facts["sources"],
        "advisories": advisories,
        "endOfLife": {
            "sources": {"redis": REDIS_SOURCE, "valkey": VALKEY_SOURCE},
            "cycles": END_OF_LIFE,
        },
    }


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else FACTS
    dataset = build(json.loads(source.read_text()))
    OUT.write_text(json.dumps(dataset, indent=1, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(dataset['advisories'])} advisories")  # noqa: T201 (a script)


if __name__ == "__main__":
    main()
