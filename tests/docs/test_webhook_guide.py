"""The alert webhook guide, walked as written against what `make run` starts: its command,
its receiver (the guide's own code, run as `python3 receiver.py`), its request body, its
test delivery, and a real delivery when the embedded Valkey is stopped as step 4 says."""

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.deploy.make_run import MakeRun, make_runs, user_env
from tests.fixtures.app import free_port
from tests.fixtures.servers import HOST

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guides" / "alert-webhook.md"
TEMPLATES = ROOT / "src" / "svc_monitor" / "web" / "templates"
GUIDE_PORT = "8808"  # the receiver's port in the guide; the test's own is free
OWNER = {"email": "owner@example.com", "name": "Owner", "password": "a good long password"}
WAIT_S = 15.0


def _text() -> str:
    return GUIDE.read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", _text(), flags=re.M | re.S)


def _receiver_code() -> str:
    (code,) = [b for b in _blocks("python") if b.startswith("# receiver.py")]
    return code


def _request_body() -> dict[str, object]:
    """The JSON the guide's curl sends to create the webhook."""
    (block,) = [b for b in _blocks("sh") if "/api/webhooks \\" in b]
    match = re.search(r"-d '(\{.*?\})'", block, flags=re.S)
    assert match is not None, block
    body: dict[str, object] = json.loads(match.group(1))
    return body


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "receiver.py ended"
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail("receiver.py never listened")


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """The guide's receiver.py, run as it says, on a free port; its port and output file."""
    port = free_port()
    script = tmp_path / "receiver.py"
    script.write_text(_receiver_code().replace(GUIDE_PORT, str(port)), encoding="utf-8")
    output = tmp_path / "receiver.out"  # its prints; http.server logs each request to stderr
    with output.open("wb") as out, (tmp_path / "receiver.err").open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, str(script)], cwd=tmp_path, stdout=out, stderr=err
        )
    try:
        _wait_listening(port, process)
        yield port, output
    finally:
        process.kill()
        process.wait(timeout=10)


def _printed(output: Path, count: int) -> list[str]:
    """The receiver's first `count` delivery lines (bounded wait)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = [line for line in output.read_text().splitlines() if line.strip()]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def _owner_token(run: MakeRun) -> str:
    with httpx.Client(base_url=run.base, headers={"Origin": run.base}, timeout=10) as browser:
        assert browser.post("/api/auth/register", json=OWNER).status_code == 201
        made = browser.post("/api/tokens", json={"name": "guide"})
    assert made.status_code == 201, made.text
    token: str = made.json()["token"]
    return token


def test_it_starts_make_run_in_development_mode():
    assert any(
        line.strip() == "NODE_ENV=development make run" for line in _blocks("sh")[0].splitlines()
    )


def test_the_ui_labels_it_names_are_on_the_pages():
    ui = _text().split("**In the UI:**", 1)[1].split("**With the API", 1)[0]
    labels = set(re.findall(r"\*\*([^*]+)\*\*", ui)) - {"Webhooks"}
    templates = " ".join(p.read_text(encoding="utf-8") for p in TEMPLATES.rglob("*.html"))
    assert labels, ui
    for label in labels:
        assert label in templates, f"the guide names {label!r}, which no page shows"


def test_walked_as_written_it_delivers_signed_to_the_receiver(
    tmp_path: Path, receiver: tuple[int, Path]
) -> None:
    port, output = receiver
    with make_runs(tmp_path) as start:
        run = start(user_env(NODE_ENV="development"))
        run.wait_healthy()
        token = _owner_token(run)
        body = json.loads(json.dumps(_request_body()).replace(GUIDE_PORT, str(port)))
        assert body["url"] == f"http://127.0.0.1:{port}/", "the guide's URL is not the receiver's"
        with httpx.Client(
            base_url=run.base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as api:
            created = api.post("/api/webhooks", json=body)
            assert created.status_code == 201, created.text
            webhook = created.json()["id"]

            tested = api.post(f"/api/webhooks/{webhook}/test")
            assert tested.status_code == 200, tested.text
            assert (tested.json()["success"], tested.json()["statusCode"]) == (True, 204)
            (test_line,) = _printed(output, 1)
            assert test_line.startswith("instance.down signed {"), test_line
            assert json.loads(test_line.split(" ", 2)[2])["data"]["test"] is True

            # Step 4: the pid the log names is the embedded Valkey, a child of the service.
            _, pid = run.embedded()
            valkey = psutil.Process(pid)
            assert valkey.ppid() == run.service().pid
            assert "valkey" in valkey.name()
            valkey.kill()
            lines = _printed(output, 2)
            assert len(lines) == 2, lines
            assert lines[1].startswith("instance.down signed {"), lines[1]
            deadline = time.monotonic() + WAIT_S
            while True:
                listed = api.get(f"/api/webhooks/{webhook}/deliveries").json()
                # Its row is stored before the POST and its result a few ms after the
                # answer: the receiver may have printed it while the row is still pending.
                if (listed and listed[0]["status"] != "pending") or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert [(d["eventType"], d["status"]) for d in listed] == [("instance.down", "success")]
