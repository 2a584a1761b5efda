"""The domain lists of the import contracts and the layer table of docs/architecture.md are
what scripts/import_contracts_gen.py writes from src/svc_monitor/domains.py, and a domain
named there reaches every contract that lists domains."""

import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from scripts.import_contracts_gen import (
    ARCHITECTURE,
    COMMAND,
    PYPROJECT,
    architecture_text,
    bounded_domains,
    layers_contract,
    pyproject_text,
    write,
)

from svc_monitor import domains

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "svc_monitor"


def _contracts(pyproject: str) -> dict[str, dict[str, Any]]:
    config = tomllib.loads(pyproject)["tool"]["importlinter"]
    return {contract["name"].split(":")[0]: contract for contract in config["contracts"]}


def _committed(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


class TestCommitted:
    def test_pyproject_is_what_the_script_writes(self):
        committed = _committed(PYPROJECT)
        assert committed == pyproject_text(committed), (
            f"the import contracts differ from src/svc_monitor/domains.py: run `{COMMAND}`"
        )

    def test_the_layer_table_is_what_the_script_writes(self):
        committed = _committed(ARCHITECTURE)
        assert committed == architecture_text(committed, _committed(PYPROJECT)), (
            f"{ARCHITECTURE}'s layer table differs from the Layers contract: run `{COMMAND}`"
        )

    def test_writing_them_again_changes_nothing(self, tmp_path: Path):
        for name in (PYPROJECT, ARCHITECTURE):
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / name, tmp_path / name)
        shutil.copytree(PACKAGE, tmp_path / "src" / "svc_monitor")
        (tmp_path / PYPROJECT).write_text(
            _committed(PYPROJECT).replace('"svc_monitor.audit", ', ""), encoding="utf-8"
        )
        assert write(tmp_path) == [PYPROJECT]
        assert write(tmp_path) == []
        assert (tmp_path / PYPROJECT).read_text(encoding="utf-8") == _committed(PYPROJECT)


class TestDomains:
    def test_every_domain_is_a_package(self):
        for name in domains.BASE + domains.FEATURE:
            assert (PACKAGE / name / "__init__.py").is_file(), name
        for name, parts in domains.SPLIT.items():
            for part in parts:
                assert (PACKAGE / name / part / "__init__.py").is_file(), f"{name}.{part}"

    def test_a_domain_is_named_once(self):
        names = domains.BASE + domains.FEATURE
        assert len(names) == len(set(names))
        assert set(domains.BOUNDARY_EXEMPT) <= set(names)
        assert set(domains.SPLIT) <= set(names) - set(domains.BOUNDARY_EXEMPT)

    def test_the_boundaries_split_and_exempt_as_listed(self):
        bounded = bounded_domains()
        assert "console.cli" in bounded
        assert "console.monitor" in bounded
        assert "console" not in bounded
        assert "detectors" not in bounded


class TestANewDomain:
    """One name in domains.py, and every contract that lists the domains lists it."""

    @pytest.fixture
    def written(self, monkeypatch: pytest.MonkeyPatch) -> str:
        monkeypatch.setattr(domains, "FEATURE", (*domains.FEATURE, "zebra"))
        return pyproject_text(_committed(PYPROJECT))

    def test_it_is_a_feature_layer_module(self, written: str):
        layers = layers_contract(written)
        feature = next(layer for layer in layers if "zebra" in layer)
        assert set(feature) == set(domains.FEATURE)
        base = layers[layers.index(feature) + 1]
        assert set(base) == set(domains.BASE)

    def test_the_forbidden_contracts_list_it(self, written: str):
        contracts = _contracts(written)
        assert "svc_monitor.zebra" in contracts["Only sources feed the pipe"]["source_modules"]
        assert (
            "svc_monitor.zebra"
            in contracts["Live state is written only by the pipe"]["source_modules"]
        )
        mcp = contracts["The MCP server reaches the service only through its REST API"]
        assert "svc_monitor.zebra" in mcp["forbidden_modules"]

    def test_the_boundaries_contract_lists_it(self, written: str):
        boundaries = _contracts(written)[
            "Another domain is reached only through its service, models and schemas"
        ]
        assert "zebra" in boundaries["domains"]

    def test_the_hand_written_parts_stay(self, written: str):
        before, after = _contracts(_committed(PYPROJECT)), _contracts(written)
        assert before.keys() == after.keys()
        mcp = "The MCP server reaches the service only through its REST API"
        assert after[mcp]["forbidden_modules"][-5:] == before[mcp]["forbidden_modules"][-5:]
        assert "svc_monitor.services" in after[mcp]["forbidden_modules"]
        layers = "Layers"
        assert after[layers]["layers"][0] == "__main__"
        assert after[layers]["layers"][-1] == "kit"

    def test_the_layer_table_lists_it(self, written: str):
        table = architecture_text(_committed(ARCHITECTURE), written)
        row = next(line for line in table.splitlines() if line.startswith("| feature domains"))
        assert "`zebra`" in row  # not a folder (yet), so without the slash


class TestLayerTable:
    def test_one_row_per_layer_top_first(self):
        text = _committed(ARCHITECTURE)
        table = text[text.index("| layer | packages | holds |") :].split("\n\n", 1)[0]
        cells = [re.findall(r"`([^`/]+)/?`", row.split(" | ")[1]) for row in table.splitlines()[2:]]
        assert cells == layers_contract(_committed(PYPROJECT))

    def test_a_layer_without_words_is_refused(self):
        pyproject = _committed(PYPROJECT).replace('"pipe",\n', '"pipe",\n    "newlayer",\n')
        with pytest.raises(ValueError, match="newlayer"):
            architecture_text(_committed(ARCHITECTURE), pyproject)

    def test_a_missing_block_is_refused(self):
        with pytest.raises(ValueError, match="every domain"):
            pyproject_text(_committed(PYPROJECT).replace("generated: every domain", "gone"))
