"""The entitlement server's environment (`svc-monitor entitlement serve`).

A separate app with separate settings: a monitor never reads these, and this
server never reads the monitor's.
"""

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from svc_monitor.config import StorageType
from svc_monitor.licensing.keys import KID_FORM, UntrustedKey, load_public_key
from svc_monitor.licensing.tokens import load_private_key


class EntitlementSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=None, extra="ignore", case_sensitive=True, frozen=True, validate_default=True
    )

    ENTITLEMENT_PORT: Annotated[int, Field(ge=1, le=65535)] = 3002
    ENTITLEMENT_BIND_HOST: str = "127.0.0.1"
    ENTITLEMENT_STORAGE_TYPE: StorageType = StorageType.SQLITE
    ENTITLEMENT_STORAGE_URL: SecretStr | None = None  # postgres
    ENTITLEMENT_SQLITE_FILEPATH: Path = Path("./data/entitlement.db")
    # Staff credential: creates accounts and licences, may act on any licence.
    ENTITLEMENT_ADMIN_TOKEN: SecretStr
    LICENSE_SIGNING_PRIVATE_KEY: SecretStr
    LICENSE_SIGNING_KID: str
    # Answered on GET /v1/version for the monitors' update check; unset: 404.
    ENTITLEMENT_LATEST_VERSION: str | None = None
    ENTITLEMENT_RELEASE_URL: str | None = None
    LOG_LEVEL: str = "info"

    @field_validator("ENTITLEMENT_STORAGE_TYPE", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("ENTITLEMENT_ADMIN_TOKEN")
    @classmethod
    def _long_admin_token(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 32:
            raise ValueError("must be at least 32 characters")
        return value

    @field_validator("LICENSE_SIGNING_KID")
    @classmethod
    def _kid_form(cls, value: str) -> str:
        if not KID_FORM.match(value):
            raise ValueError("must look like lic-YYYY-MM")
        return value

    @field_validator("LICENSE_SIGNING_PRIVATE_KEY")
    @classmethod
    def _usable_private_key(cls, value: SecretStr) -> SecretStr:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        try:
            key = load_private_key(value.get_secret_value())
        except (ValueError, TypeError):
            raise ValueError("is not an unencrypted RSA private key in PEM form") from None
        public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        try:
            load_public_key(public.decode())
        except UntrustedKey as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _postgres_needs_url(self) -> "EntitlementSettings":
        if (
            self.ENTITLEMENT_STORAGE_TYPE is StorageType.POSTGRES
            and not self.ENTITLEMENT_STORAGE_URL
        ):
            raise ValueError("ENTITLEMENT_STORAGE_URL is required for postgres storage")
        if self.ENTITLEMENT_STORAGE_TYPE is StorageType.TURSO:
            raise ValueError("ENTITLEMENT_STORAGE_TYPE takes memory, sqlite or postgres")
        return self
