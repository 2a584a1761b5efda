"""The agent's settings, from its environment (docs/features/agent.md#running-the-agent).

The instance is named as the service's own default connection is (DB_HOST, DB_PORT, ...),
so a deployment that already sets those for svc-monitor sets them for the agent alike.
The password comes from DB_PASSWORD or a file (DB_PASSWORD_FILE), never from an argument:
arguments show in every `ps` on the host.

One agent may also watch many instances (every instance of a private subnet, say): a
targets file (SVC_AGENT_TARGETS_FILE, YAML or JSON) lists them, each with its own token,
and the agent keeps one link per instance.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from svc_monitor.agent.instance import Target

LINK_PATH = "/agent/ws"


class TargetEntry(BaseModel):
    """One instance of a targets file. Secrets by reference only: a file or the name of an
    environment variable, so the targets file itself holds none."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    token_file: Path | None = Field(None, alias="tokenFile")
    token_env: str | None = Field(None, alias="tokenEnv")
    host: Annotated[str, Field(min_length=1)]
    port: Annotated[int, Field(ge=1, le=65535)] = 6379
    username: str | None = None
    password_file: Path | None = Field(None, alias="passwordFile")
    password_env: str | None = Field(None, alias="passwordEnv")
    tls: bool = False
    tls_ca_file: Path | None = Field(None, alias="tlsCaFile")
    db: Annotated[int, Field(ge=0, le=15)] = 0

    @model_validator(mode="after")
    def _references(self) -> "TargetEntry":
        if (self.token_file is None) == (self.token_env is None):
            raise ValueError("give exactly one of tokenFile and tokenEnv")
        if self.password_file is not None and self.password_env is not None:
            raise ValueError("give passwordFile or passwordEnv, not both")
        return self


class TargetsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: Annotated[list[TargetEntry], Field(min_length=1, max_length=1000)]


def _from_env(name: str, what: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"{what}: the environment variable {name} is not set")
    return value


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", case_sensitive=True)

    SVC_URL: Annotated[str, Field(min_length=1)]
    """The service's address, https://monitor.example.com (http:// only with
    SVC_AGENT_ALLOW_HTTP=true)."""
    SVC_AGENT_TOKEN: SecretStr | None = None
    """The agent token an admin made for this connection (shown once)."""
    SVC_AGENT_TOKEN_FILE: Path | None = None
    """A file holding the token, instead of SVC_AGENT_TOKEN."""
    SVC_CA_BUNDLE: Path | None = None
    """PEM file of the CAs that sign the service's certificate (default: the system's)."""
    SVC_AGENT_ALLOW_HTTP: bool = False
    """Dial http:// (ws://): for trying the agent on one machine, never across a network."""
    SVC_AGENT_TARGETS_FILE: Path | None = None
    """A YAML (or JSON) file of instances to watch, each with its own token, instead of
    DB_* and SVC_AGENT_TOKEN."""

    DB_HOST: str = "127.0.0.1"
    DB_PORT: Annotated[int, Field(ge=1, le=65535)] = 6379
    DB_USERNAME: str | None = None
    DB_PASSWORD: SecretStr | None = None
    DB_PASSWORD_FILE: Path | None = None
    DB_TLS: bool = False
    DB_TLS_CA_FILE: Path | None = None
    DB_DB: Annotated[int, Field(ge=0, le=15)] = 0

    CONNECT_TIMEOUT_MS: Annotated[int, Field(ge=100)] = 5000
    """Connecting to the instance and to the service."""
    COMMAND_TIMEOUT_MS: Annotated[int, Field(ge=100)] = 30000
    """The longest the instance may take over one request's commands."""

    @field_validator("SVC_URL")
    @classmethod
    def _https(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("SVC_URL must be an https:// address of svc-monitor")
        return value

    @model_validator(mode="after")
    def _one_token(self) -> "AgentSettings":
        if self.SVC_AGENT_TARGETS_FILE is not None:
            given = {"SVC_AGENT_TOKEN", "SVC_AGENT_TOKEN_FILE", "DB_HOST", "DB_PORT"}
            clash = sorted(given & self.model_fields_set)
            if clash:
                raise ValueError(
                    f"{clash[0]}: with SVC_AGENT_TARGETS_FILE each instance and its token "
                    "are named in the file"
                )
        elif (self.SVC_AGENT_TOKEN is None) == (self.SVC_AGENT_TOKEN_FILE is None):
            raise ValueError("set exactly one of SVC_AGENT_TOKEN and SVC_AGENT_TOKEN_FILE")
        if self.DB_PASSWORD is not None and self.DB_PASSWORD_FILE is not None:
            raise ValueError("set DB_PASSWORD or DB_PASSWORD_FILE, not both")
        if urlsplit(self.SVC_URL).scheme == "http" and not self.SVC_AGENT_ALLOW_HTTP:
            raise ValueError(
                "SVC_URL is http://: the token and every reply would cross the network in "
                "clear; use https://, or SVC_AGENT_ALLOW_HTTP=true on one machine"
            )
        return self

    def link_url(self) -> str:
        """wss://host[:port][/prefix]/agent/ws."""
        parts = urlsplit(self.SVC_URL)
        scheme = "wss" if parts.scheme == "https" else "ws"
        return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + LINK_PATH, "", ""))

    def token(self) -> str:
        if self.SVC_AGENT_TOKEN is not None:
            return self.SVC_AGENT_TOKEN.get_secret_value().strip()
        assert self.SVC_AGENT_TOKEN_FILE is not None
        return self.SVC_AGENT_TOKEN_FILE.read_text().strip()

    def password(self) -> str | None:
        if self.DB_PASSWORD is not None:
            return self.DB_PASSWORD.get_secret_value()
        if self.DB_PASSWORD_FILE is not None:
            return self.DB_PASSWORD_FILE.read_text().rstrip("\r\n")
        return None

    def _target(
        self,
        host: str,
        port: int,
        username: str | None,
        password: str | None,
        tls: bool,
        ca: Path | None,
        db: int,
    ) -> Target:
        return Target(
            host=host,
            port=port,
            username=username,
            password=password,
            tls=tls,
            tls_ca_file=str(ca) if ca else None,
            db=db,
            connect_timeout_s=self.CONNECT_TIMEOUT_MS / 1000,
            command_timeout_s=self.COMMAND_TIMEOUT_MS / 1000,
        )

    def links(self) -> list[tuple[Callable[[], str], Target]]:
        """Each instance to watch and how to read its token (read at every dial, so a
        rotated token file is picked up). ValueError naming what is wrong in a file."""
        if self.SVC_AGENT_TARGETS_FILE is None:
            return [
                (
                    self.token,
                    self._target(
                        self.DB_HOST, self.DB_PORT, self.DB_USERNAME, self.password(),
                        self.DB_TLS, self.DB_TLS_CA_FILE, self.DB_DB,
                    ),
                )
            ]  # fmt: skip
        path = self.SVC_AGENT_TARGETS_FILE
        try:
            loaded = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"SVC_AGENT_TARGETS_FILE: cannot read {path}: {exc}") from None
        try:
            parsed = TargetsFile.model_validate(loaded)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"SVC_AGENT_TARGETS_FILE: {where}: {first['msg']}") from None
        links = []
        for number, entry in enumerate(parsed.targets):
            what = f"targets.{number}"
            password = None
            if entry.password_file is not None:
                password = entry.password_file.read_text().rstrip("\r\n")
            elif entry.password_env is not None:
                password = _from_env(entry.password_env, f"{what}.passwordEnv")
            if entry.token_env is not None:
                _from_env(entry.token_env, f"{what}.tokenEnv")  # fail now, not at the dial
            target = self._target(
                entry.host, entry.port, entry.username, password, entry.tls,
                entry.tls_ca_file, entry.db,
            )  # fmt: skip
            links.append((_token_reader(entry, what), target))
        return links


def _token_reader(entry: TargetEntry, what: str) -> Callable[[], str]:
    if entry.token_file is not None:
        token_file = entry.token_file
        return lambda: token_file.read_text().strip()
    name = entry.token_env or ""
    return lambda: _from_env(name, f"{what}.tokenEnv").strip()
