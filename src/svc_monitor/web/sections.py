"""One part of a page that may fail on its own: a value, or why there is none.

A page is built from several reads (live INFO, a stored history, a live command).
Each is loaded into a `Section`, so an engine that lacks a feature shows its
requirement, and an unreachable one its status, while the rest of the page renders.
"""

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from svc_monitor.engine.errors import EngineError
from svc_monitor.errors import AppError, Conflict, NotSupported, Unavailable

T = TypeVar("T")

Problem = Literal["unsupported", "unavailable", "error"]


@dataclass(frozen=True, slots=True)
class Section(Generic[T]):
    value: T | None = None
    problem: Problem | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    @classmethod
    def unsupported(cls, message: str) -> "Section[T]":
        return cls(problem="unsupported", message=message)


async def load(read: Awaitable[T]) -> Section[T]:
    """Await one read; an expected failure becomes the section's message."""
    try:
        return Section(value=await read)
    except (NotSupported, Conflict) as exc:  # Conflict: cluster mode off, unreadable secret
        return Section(problem="unsupported", message=exc.message)
    except Unavailable as exc:
        return Section(problem="unavailable", message=exc.message)
    except AppError as exc:
        return Section(problem="error", message=exc.message)
    except EngineError as exc:
        return Section(problem="unavailable", message=exc.message)
