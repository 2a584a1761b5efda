"""The core of one app's object graph: `build_services(settings)` builds every long-lived
service the server needs before it listens (storage, connections, settings, users, the
licence, webhooks, INFO history and live state), from the core parts (core_parts.py).
What watches the instances (the pipe, its consumers and its sources: watching.py) and
the feature domains (features.py) are built right after the server listens, off the
path to its first answer.
"""

import time
from collections.abc import Callable

from svc_monitor.config import Settings
from svc_monitor.core_parts import CORE_PARTS, STOP_ORDER
from svc_monitor.events import EventBus
from svc_monitor.kit.secret_box import SecretBox
from svc_monitor.parts import Core, Part, Registry
from svc_monitor.pipe.live_state import LiveState
from svc_monitor.services import Services
from svc_monitor.storage.app_meta import AppMetaStore
from svc_monitor.storage.database import Database


def build_services(
    settings: Settings, *, clock: Callable[[], float] = time.time
) -> tuple[Services, tuple[Part, ...]]:
    """The infrastructure every part stands on, then the core parts in order
    (core_parts.py); returns the typed view of what they registered, and the parts."""
    db = Database.from_settings(settings)
    secrets = SecretBox(settings.ENCRYPTION_KEY, salt=settings.ENCRYPTION_KEK_SALT)
    registry = Registry()
    core = registry.add(
        Core, Core(settings, clock, db, secrets, AppMetaStore(db), EventBus(), LiveState())
    )
    registry.add(Settings, settings)
    registry.add(Database, db)
    registry.add(SecretBox, secrets)
    registry.add(AppMetaStore, core.meta)
    registry.add(EventBus, core.bus)
    registry.add(LiveState, core.live_state)
    parts = tuple(build(registry) for build in CORE_PARTS)
    unordered = {p.name for p in parts if p.stop is not None} - set(STOP_ORDER)
    if unordered:
        raise ValueError(f"core parts with a stop hook missing from STOP_ORDER: {unordered}")
    return registry.view(Services, clock=clock), parts


def stop_order(parts: tuple[Part, ...]) -> list[Part]:
    """The core parts whose stop hooks run, in STOP_ORDER (core_parts.py)."""
    by_name = {p.name: p for p in parts if p.stop is not None}
    return [by_name[name] for name in STOP_ORDER if name in by_name]
