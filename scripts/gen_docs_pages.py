"""Run by mkdocs-gen-files during `mkdocs build`: writes the generated reference pages."""

import sys
from pathlib import Path

import mkdocs_gen_files

# mkdocs runs this file by path; the repository root makes `scripts` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.docs_reference import PAGES

for page, build in PAGES.items():
    with mkdocs_gen_files.open(page, "w") as out:
        out.write(build())
    mkdocs_gen_files.set_edit_path(page, "scripts/docs_reference.py")
