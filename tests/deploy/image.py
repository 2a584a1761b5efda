"""The Dockerfile's runtime stage as Docker would apply it: what the deploy tests hold the
compose file, the Kubernetes manifests and the served command to."""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from dockerfile_parse import DockerfileParser  # type: ignore[import-untyped]

DOCKERFILE = Path(__file__).resolve().parents[2] / "Dockerfile"
IMAGE_VENV = "/opt/venv"
IMAGE_DATA_DIR = "/app/data"
IMAGE_WORKDIR = "/app"
# python:3.11-slim's own PATH, which the runtime stage extends.
BASE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class RuntimeStage:
    env: dict[str, str]
    user: str
    command: list[str]
    healthcheck_options: dict[str, str]
    healthcheck: list[str]
    exposed: list[str]
    workdir: str


def runtime_stage() -> RuntimeStage:
    """The last stage's instructions, as Docker would apply them."""
    parser = DockerfileParser(str(DOCKERFILE), env_replace=True, parent_env={"PATH": BASE_PATH})
    last: dict[str, str] = {}
    exposed: list[str] = []
    for instruction in parser.structure:
        if instruction["instruction"] == "FROM":
            last, exposed = {}, []
        elif instruction["instruction"] == "EXPOSE":
            exposed += instruction["value"].split()
        else:
            last[instruction["instruction"]] = instruction["value"]
    options, _, check = last["HEALTHCHECK"].partition("CMD ")
    return RuntimeStage(
        env=dict(parser.envs),
        user=last["USER"],
        command=json.loads(last["ENTRYPOINT"]) + json.loads(last["CMD"]),
        healthcheck_options=dict(re.findall(r"--([a-z-]+)=(\S+)", options)),
        healthcheck=json.loads(check),
        exposed=exposed,
        workdir=last["WORKDIR"],
    )
