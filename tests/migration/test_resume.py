"""A SIGKILL of svc-monitor in the middle of a copy: the restarted service resumes it
where its stored state says, and validation still finds nothing different."""

import signal
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.licensing import SigningKey
from tests.fixtures.replica_processes import replica_process, service_env
from tests.migration.keyspace import load

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]
SERVE = [sys.executable, str(Path(__file__).with_name("licensed_serve.py"))]


def wait_for(url: str, check: Any, *, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        body = httpx.get(url, timeout=5).json()
        if check(body):
            return dict(body)
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {within} s: {body}")
        time.sleep(0.2)


def test_a_killed_copy_resumes_and_validates(fresh: Any, signing_key: SigningKey, tmp_path: Path):
    source, target = fresh("valkey"), fresh("redis7")
    load(source, 4_200)  # 50,400 keys in 2 databases, copied type by type
    env = service_env(
        target,
        tmp_path,
        STORAGE_TYPE="sqlite",
        STORAGE_SQLITE_FILEPATH=str(tmp_path / "svc.db"),
        SVC_OFFLINE_LICENSE=signing_key.mint(tier="pro"),
        TEST_LICENSE_KID=signing_key.kid,
        TEST_LICENSE_PEM=signing_key.public_pem,
    )
    with replica_process(env, tmp_path / "first.log", SERVE) as service:
        api = f"{service.url}/api"
        ids = [
            httpx.post(
                f"{api}/connections", json={"name": n, "host": s.host, "port": s.port}
            ).json()["id"]
            for n, s in (("src", source), ("dst", target))
        ]
        ends = {"sourceConnectionId": ids[0], "targetConnectionId": ids[1]}
        started = httpx.post(f"{api}/migration/execution", json=ends, timeout=30)
        assert started.status_code == 202, started.text
        job_url = f"{api}/migration/execution/{started.json()['id']}"
        before = wait_for(
            job_url,
            lambda b: (b["progressDetail"] or {}).get("copiedKeys", 0) >= 10_000,
            within=120,
        )
        service.signal(signal.SIGKILL)
        service.process.wait(timeout=10)
    assert before["status"] == "running"
    with replica_process(env, tmp_path / "second.log", SERVE) as service:
        api = f"{service.url}/api"
        done = wait_for(
            f"{api}/migration/execution/{started.json()['id']}",
            lambda b: b["status"] != "running" and b["status"] != "pending",
            within=300,
        )
        assert done["status"] == "completed", done
        report = done["report"]
        assert report["resumes"] == 1
        assert report["copiedKeys"] >= 50_400  # a page cut short by the kill is copied again
        checked = httpx.post(
            f"{api}/migration/validation", json={**ends, "executionId": done["id"]}, timeout=30
        )
        assert checked.status_code == 202, checked.text
        validation = wait_for(
            f"{api}/migration/validation/{checked.json()['id']}",
            lambda b: b["status"] not in ("pending", "running"),
            within=200,
        )
    assert validation["status"] == "completed", validation
    assert validation["report"]["differenceCount"] == 0, validation["report"]["differences"][:5]
    assert sum(c["target"] for c in validation["report"]["counts"]) == 50_400
