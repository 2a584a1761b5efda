"""The error tree: what services raise when a request cannot be served as asked.

    AppError (400)
    ├── Unauthorized (401)    no signed-in user where one is needed
    ├── NotFound (404)
    ├── Conflict (409)
    ├── Forbidden (403)
    ├── Unprocessable (422)   bad input that passed the schema but not a rule (names the field)
    ├── TooManyRequests (429) carries Retry-After
    ├── Unavailable (503)
    └── NotSupported (501)

Domain errors subclass these next to their service. Services raise them; api.py
never catches them. Every expected failure carries a 4xx/501/503 status, so a 500
always means a bug. api/error_responses.py renders them as the one error body
`{statusCode, message, error}` (docs/features/http-api.md); nothing here knows HTTP
beyond the status number.
"""

from typing import Any


class AppError(Exception):
    status_code = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        # More members of the error body, for clients that act on them (a locked feature
        # names the feature and tiers); plain facts, never secrets.
        self.extra: dict[str, Any] = {}
        # Response headers the answer needs (Retry-After, WWW-Authenticate).
        self.headers: dict[str, str] | None = None


class Unauthorized(AppError):
    status_code = 401


class NotFound(AppError):
    status_code = 404


class Conflict(AppError):
    status_code = 409


class Forbidden(AppError):
    status_code = 403


class Unprocessable(AppError):
    status_code = 422


class TooManyRequests(AppError):
    status_code = 429

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(max(1, retry_after_s))}


class Unavailable(AppError):
    status_code = 503


class NotSupported(AppError):
    status_code = 501
