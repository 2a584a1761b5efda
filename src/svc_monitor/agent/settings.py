"""The agent's settings, from its environment (docs/features/agent.md#running-the-agent).

The instance is named as the service's own default connection is (DB_HOST, DB_PORT, ...),
so a deployment that already sets those for svc-monitor sets them for the agent alike.
The password comes from DB_PASSWORD or a file (DB_PASSWORD_FILE), never from an argument:
arguments show in every `ps` on the host.
"""

from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

LINK_PATH = "/agent/ws"


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
        if (self.SVC_AGENT_TOKEN is None) == (self.SVC_AGENT_TOKEN_FILE is None):
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
