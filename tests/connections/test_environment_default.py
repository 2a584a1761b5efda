"""DB_HOST and DB_PORT create the default connection on the first start only: a later
start whose variables differ from it keeps the stored one, and says so in its log."""

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.fixtures.app import make_settings, running_app, target_of
from tests.fixtures.replica_processes import replica_process, service_env
from tests.fixtures.servers import RunningServer

PASSWORD = "env-password-never-logged-7c1e"
SAID = "DB_HOST/DB_PORT say"


def said(log: str) -> list[str]:
    return [line for line in log.splitlines() if SAID in line]


def test_a_changed_db_port_is_named_in_the_log_of_the_next_start(
    valkey_server: RunningServer, fresh: Callable[..., RunningServer], tmp_path: Path
) -> None:
    moved_to = fresh("valkey")
    storage = {
        "STORAGE_TYPE": "sqlite",
        "STORAGE_SQLITE_FILEPATH": tmp_path / "svc.db",
        "DB_PASSWORD": PASSWORD,
    }
    first_env = service_env(valkey_server, tmp_path / "data", **storage)
    with replica_process(first_env, tmp_path / "first.log") as first:
        stored = httpx.get(f"{first.url}/api/connections/env-default", timeout=5).json()
        first_log = first.log_path.read_text(errors="replace")
    assert stored["port"] == valkey_server.port
    assert said(first_log) == []

    second_env = service_env(moved_to, tmp_path / "data", **storage)
    with replica_process(second_env, tmp_path / "second.log") as second:
        still = httpx.get(f"{second.url}/api/connections/env-default", timeout=5).json()
        second_log = second.log_path.read_text(errors="replace")
    assert still["port"] == valkey_server.port  # the stored connection wins, as documented
    [line] = said(second_log)
    assert f"say 127.0.0.1:{moved_to.port}," in line
    assert f"stored with 127.0.0.1:{valkey_server.port}," in line
    assert "PUT /api/connections/env-default" in line
    assert "connection dialog" in line
    assert PASSWORD not in first_log + second_log


@pytest.mark.parametrize(
    "second",
    [
        pytest.param("same", id="unchanged"),
        pytest.param("unset", id="not-given"),
    ],
)
async def test_nothing_is_said_when_the_variables_match_or_are_not_given(
    valkey_server: RunningServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    second: str,
) -> None:
    storage = {"STORAGE_TYPE": "sqlite", "STORAGE_SQLITE_FILEPATH": tmp_path / "svc.db"}
    async with running_app(make_settings(**target_of(valkey_server), **storage)):
        pass
    again = target_of(valkey_server) if second == "same" else {}
    caplog.clear()
    async with running_app(make_settings(**again, **storage)) as app:
        assert (await app.client.get("/api/connections/env-default")).status_code == 200
    assert [r.getMessage() for r in caplog.records if SAID in r.getMessage()] == []
