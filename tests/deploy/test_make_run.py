"""`make run`, the first thing a new user types: what it opens, what it keeps across a restart,
and which instance it watches when DB_HOST comes and goes between runs."""

import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.deploy.make_run import MakeRun, make_runs, user_env
from tests.fixtures.servers import HOST, RunningServer

pytestmark = pytest.mark.slow

LOOPBACK = {"127.0.0.1", "::1"}
OWNER = {"email": "new@example.com", "name": "New Comer", "password": "a good long password"}


def claim(run: MakeRun) -> str:
    """Register the owner on a fresh install, as the claim page does, and make a token."""
    with httpx.Client(base_url=run.base, headers={"Origin": run.base}, timeout=10) as browser:
        registered = browser.post("/api/auth/register", json=OWNER)
        assert registered.status_code == 201, registered.text
        made = browser.post("/api/tokens", json={"name": "scripts"})
        assert made.status_code == 201, made.text
        token: str = made.json()["token"]
        return token


def api(run: MakeRun, token: str) -> httpx.Client:
    return httpx.Client(base_url=run.base, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def connections(run: MakeRun, token: str) -> dict[str, dict[str, Any]]:
    with api(run, token) as client:
        listed = client.get("/api/connections")
    assert listed.status_code == 200, listed.text
    return {c["id"]: c for c in listed.json()}


def wait_connected(run: MakeRun, token: str, connection_id: str) -> dict[str, Any]:
    """The connection once its start-up check says it answers (bounded)."""
    deadline = time.monotonic() + 10
    while True:
        found = connections(run, token).get(connection_id)
        if found is not None and found["engine"]["status"] == "connected":
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"{connection_id} never connected: {found}\n{run.log}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MakeRun]:
    """One fresh `make run`, up, that the tests of TestFirstStart only look at."""
    workdir = tmp_path_factory.mktemp("make-run")
    with make_runs(workdir) as start:
        run = start(user_env())
        run.wait_healthy()
        yield run


class TestFirstStart:
    def test_it_listens_on_this_machine_only(self, first: MakeRun) -> None:
        """The README promises http://localhost:3001; nothing is reachable from elsewhere."""
        for process in first.processes:
            listening = [
                c for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN
            ]
            assert listening or process is not first.processes[0]
            outside = [c.laddr for c in listening if c.laddr.ip not in LOOPBACK]
            assert not outside, f"{process.name()} listens beyond loopback: {outside}"
        assert first.port in {
            c.laddr.port
            for c in first.processes[0].net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.ip == HOST
        }

    def test_its_state_lives_in_data_readable_by_its_owner_alone(self, first: MakeRun) -> None:
        database = first.log_path.parent / "data" / "audit.db"
        assert database.is_file(), sorted(p.name for p in first.log_path.parent.iterdir())
        for path in (database.parent, database):
            mode = stat.S_IMODE(path.stat().st_mode)
            assert not mode & 0o077, f"{path} is mode {mode:o}"


class TestRestart:
    def test_account_token_and_connections_outlive_a_restart_in_development_mode(
        self, tmp_path: Path, valkey_server: RunningServer
    ) -> None:
        """The webhook guide's restart (NODE_ENV=development for a local receiver) keeps
        everything, and the default connection follows the embedded Valkey to its new port."""
        with make_runs(tmp_path) as start:
            first = start(user_env())
            first.wait_healthy()
            token = claim(first)
            with api(first, token) as client:
                added = client.post(
                    "/api/connections",
                    json={"name": "cache", "host": valkey_server.host, "port": valkey_server.port},
                )
            assert added.status_code == 201, added.text
            first.stop()

            again = start(user_env(NODE_ENV="development"))
            health = again.wait_healthy()
            port, _ = again.embedded()
            with api(again, token) as client:
                me = client.get("/api/auth/me")
                tokens = client.get("/api/tokens")
            assert me.status_code == 200, me.text
            assert (me.json()["email"], me.json()["role"]) == (OWNER["email"], "owner")
            assert [t["name"] for t in tokens.json()] == ["scripts"]
            kept = wait_connected(again, token, added.json()["id"])
            assert (kept["name"], kept["port"]) == ("cache", valkey_server.port)
            assert (health["database"]["connectionId"], health["database"]["port"]) == (
                "env-default",
                port,
            )
            assert connections(again, token)["env-default"]["port"] == port
            with httpx.Client(base_url=again.base, headers={"Origin": again.base}) as browser:
                refused = browser.post("/api/auth/register", json=OWNER)
            assert refused.status_code != 201, "the workspace was claimable again"


class TestDbHostBetweenRuns:
    def test_db_host_after_an_embedded_run_becomes_the_default(
        self, tmp_path: Path, valkey_server: RunningServer
    ) -> None:
        """README: set DB_HOST to watch one of your instances instead, also after a first
        `make run` (whose embedded Valkey is gone with it)."""
        with make_runs(tmp_path) as start:
            first = start(user_env())
            first.wait_healthy()
            token = claim(first)
            first.stop()

            env = user_env(DB_HOST=valkey_server.host, DB_PORT=str(valkey_server.port))
            second = start(env)
            database = second.wait_healthy()["database"]
            assert (database["host"], database["port"]) == (valkey_server.host, valkey_server.port)
            assert "watching an embedded valkey" not in second.log.lower()
            listed = connections(second, token)
            assert sorted(listed) == ["env-default"], listed
            assert listed["env-default"]["name"] == "Default"

    def test_an_instance_from_db_host_stays_the_default_beside_the_embedded_valkey(
        self, tmp_path: Path, valkey_server: RunningServer
    ) -> None:
        """A later `make run` without DB_HOST does not overwrite the user's connection; the
        embedded Valkey is watched beside it, and removed once it is gone."""
        with make_runs(tmp_path) as start:
            env = user_env(DB_HOST=valkey_server.host, DB_PORT=str(valkey_server.port))
            first = start(env)
            first.wait_healthy()
            token = claim(first)
            first.stop()

            second = start(user_env())
            database = second.wait_healthy()["database"]
            assert (database["connectionId"], database["port"]) == (
                "env-default",
                valkey_server.port,
            )
            port, _ = second.embedded()
            embedded = wait_connected(second, token, "embedded")
            assert (embedded["name"], embedded["port"], embedded["isDefault"]) == (
                "Embedded",
                port,
                False,
            )
            second.stop()

            third = start(env)
            third.wait_healthy()
            assert sorted(connections(third, token)) == ["env-default"]
