"""The deploy page against the Dockerfile: what it tells a Podman user about the health check."""

import re
from pathlib import Path

from tests.deploy.image import runtime_stage

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
FENCE = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)


def test_a_podman_build_is_told_to_keep_the_healthcheck():
    """Podman's default (OCI) image format drops HEALTHCHECK; `--format docker` keeps it."""
    assert runtime_stage().healthcheck, "the image has no HEALTHCHECK to keep"
    text = DEPLOY.read_text(encoding="utf-8")
    commands = [line.strip() for block in FENCE.findall(text) for line in block.splitlines()]
    assert any(re.match(r"podman build --format docker\b", line) for line in commands), commands
    prose = " ".join(FENCE.sub("", text).split())
    assert re.search(r"Podman.{0,200}OCI.{0,120}HEALTHCHECK", prose), "the page does not say why"
