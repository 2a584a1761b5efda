"""What licensing routes take from a request.

Feature gates: a route that needs a paid feature says

    @router.get(..., dependencies=[RequireFeature(Feature.ANOMALY_DETECTION).depends],
                responses=error_responses(403))

and answers 403 naming the feature and the tier it needs when this install's tier
does not include it. Which tier unlocks what lives in models.py, nowhere else.

An offline licence token, read from JSON, multipart or a raw body: shared by PUT
/api/license/offline and the UI's License form, so both accept the same uploads with the
same limits and messages.
"""

from typing import Any

from fastapi import Depends, Request
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from svc_monitor.errors import AppError, Forbidden, Unprocessable
from svc_monitor.licensing.models import Feature, Tier
from svc_monitor.licensing.schemas import OfflineLicenseWrite
from svc_monitor.licensing.tokens import MAX_TOKEN_CHARS


class FeatureLocked(Forbidden):
    def __init__(self, feature: Feature, current: Tier) -> None:
        needed = feature.tier
        higher = " or Enterprise" if needed is Tier.PRO else ""
        super().__init__(
            f"{feature.label} needs the {needed.label}{higher} tier; this install runs "
            f"{current.label} (see Settings, License)"
        )
        self.extra = {
            "feature": feature.value,
            "requiredTier": needed.value,
            "currentTier": current.value,
        }


class RequireFeature:
    """A route dependency; `feature` is kept so tests and docs can list gated routes."""

    def __init__(self, feature: Feature) -> None:
        self.feature = feature

    async def __call__(self, request: Request) -> None:
        license = request.app.state.services.license
        if not license.allows(self.feature):
            raise FeatureLocked(self.feature, license.tier)

    @property
    def depends(self) -> Any:
        return Depends(self)


# A token file is about 1 KB; a multipart envelope adds a few hundred bytes.
MAX_UPLOAD_BYTES = MAX_TOKEN_CHARS + 4096
_RAW_TYPES = ("text/plain", "application/jwt", "application/octet-stream")


class PayloadTooLarge(AppError):
    status_code = 413


class UnsupportedMediaType(AppError):
    status_code = 415


async def token_from_request(request: Request) -> str:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
        raise PayloadTooLarge(f"a licence upload is at most {MAX_UPLOAD_BYTES} bytes")
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "multipart/form-data":
        return await token_from_form(request)
    raw = await _body(request)
    if media == "application/json":
        try:
            return OfflineLicenseWrite.model_validate_json(raw).token
        except ValidationError as exc:
            error = exc.errors(include_input=False, include_url=False)[0]
            where = ".".join(str(p) for p in error["loc"]) or "body"
            raise Unprocessable(f"{where}: {error['msg']}", field=where) from None
    if media in _RAW_TYPES or media == "":
        return _text(raw)
    raise UnsupportedMediaType(
        "send the token as application/json {token}, multipart/form-data (field file) or text/plain"
    )


async def _body(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_UPLOAD_BYTES:
            raise PayloadTooLarge(f"a licence upload is at most {MAX_UPLOAD_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def token_from_form(request: Request) -> str:
    """The token of a multipart form: the uploaded `file` when one was chosen, else the
    pasted `token` field (the UI's form has both)."""
    async with request.form(max_files=1, max_fields=4, max_part_size=MAX_UPLOAD_BYTES) as form:
        upload, pasted = form.get("file"), form.get("token")
        if isinstance(upload, UploadFile) and (upload.size or upload.filename):
            raw = await upload.read(MAX_UPLOAD_BYTES + 1)
            if len(raw) > MAX_UPLOAD_BYTES:
                raise PayloadTooLarge(f"a licence file is at most {MAX_UPLOAD_BYTES} bytes")
            if raw.strip():
                return _text(raw)
        if isinstance(pasted, str) and pasted.strip():
            return pasted.strip()
    raise Unprocessable("file: choose the licence file or paste its token", field="file")


def _text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise Unprocessable("token: the licence file is not text", field="token") from None
    if not text:
        raise Unprocessable("token: the licence token is empty", field="token")
    return text
