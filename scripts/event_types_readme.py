"""Rewrite the README's table of webhook event types from the event table.

    PYTHONPATH=src python scripts/event_types_readme.py

The table sits between two markers (event_types/docs.py); everything around it is
left as it is. tests/event_types/test_docs.py fails until this has been run after a
change to an event type's name, tier, severity or summary.
"""

from pathlib import Path

from svc_monitor.event_types.docs import README_BEGIN, README_END, readme_table

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> None:
    text = README.read_text()
    before, rest = text.split(README_BEGIN + "\n", 1)
    _, after = rest.split(README_END, 1)
    README.write_text(f"{before}{README_BEGIN}\n{readme_table()}\n{README_END}{after}")


if __name__ == "__main__":
    main()
