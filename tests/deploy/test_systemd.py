"""deploy/systemd/svc-monitor.service: systemd's own checker accepts it with no warning
(its ExecStart pointed at this checkout's venv, as it points at the installed one), and
the environment it gives the service, with the env file made from the shipped example, is
a configuration svc-monitor accepts, keeping its data where systemd lets it write."""

import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from svc_monitor.config import Settings, StorageType

SYSTEMD = Path(__file__).resolve().parents[2] / "deploy" / "systemd"
UNIT = SYSTEMD / "svc-monitor.service"
ENV_EXAMPLE = SYSTEMD / "svc-monitor.env.example"
INSTALLED_VENV = "/opt/svc-monitor"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def service_section() -> dict[str, list[str]]:
    """[Service] keys, each with every value given (Environment= repeats)."""
    keys: dict[str, list[str]] = {}
    section = ""
    for raw in UNIT.read_text().splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line
        elif section == "[Service]" and line and not line.startswith("#"):
            key, _, value = line.partition("=")
            keys.setdefault(key, []).append(value)
    return keys


def env_file(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    return {name.strip(): value.strip() for name, value in pairs}


def unit_environment(**replaced: str) -> dict[str, str]:
    env = dict(value.split("=", 1) for value in service_section()["Environment"])
    return env | {k: replaced.get(k, v) for k, v in env_file(ENV_EXAMPLE).items()}


def settings_of(env: dict[str, str]) -> Settings:
    return Settings(_env_file=None, **env)  # type: ignore[arg-type]


class TestUnit:
    @pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
    def test_systemd_accepts_it_without_a_warning(self, tmp_path: Path):
        assert SYSTEMD_ANALYZE is not None
        unit = tmp_path / UNIT.name
        unit.write_text(UNIT.read_text().replace(f"{INSTALLED_VENV}/", f"{sys.prefix}/"))
        result = subprocess.run(
            [SYSTEMD_ANALYZE, "verify", str(unit)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        # Unknown or misspelt keys are only warned about, with exit 0.
        assert result.stdout + result.stderr == ""

    def test_it_runs_the_installed_command_as_its_own_confined_user(self):
        service = service_section()
        assert service["ExecStart"] == [f"{INSTALLED_VENV}/bin/svc-monitor serve"]
        assert service["DynamicUser"] == ["yes"]
        assert service["NoNewPrivileges"] == ["yes"]
        assert service["ProtectSystem"] == ["strict"]
        assert service["CapabilityBoundingSet"] == [""]

    def test_a_bad_setting_is_not_restarted_forever(self):
        # Exit 2 (bad setting) and 3 (start-up refused) are the command's own codes.
        assert service_section()["RestartPreventExitStatus"] == ["2 3"]


class TestEnvironment:
    def test_data_stays_in_the_state_directory_systemd_makes_writable(self):
        replaced = {"ENCRYPTION_KEY": secrets.token_hex(32), "AUTH_SECRET": secrets.token_hex(32)}
        settings = settings_of(unit_environment(**replaced))
        (state,) = service_section()["StateDirectory"]
        state_dir = Path("/var/lib") / state
        assert state_dir == settings.SVC_DATA_DIR
        assert settings.STORAGE_TYPE is StorageType.SQLITE
        assert settings.STORAGE_SQLITE_FILEPATH.parent == state_dir
        assert service_section()["WorkingDirectory"] == [str(state_dir)]

    def test_left_over_placeholders_stop_it_naming_the_variables(self):
        with pytest.raises(ValidationError) as error:
            settings_of(unit_environment())
        named = {str(item["loc"][0]) for item in error.value.errors()}
        assert named == {"ENCRYPTION_KEY", "AUTH_SECRET"}
