"""Who may do what on an instance: ACL denials from ACL LOG (audit/denials.py), and ACL
and configuration changes (detection/config_watch.py)."""

from dataclasses import dataclass
from typing import Any

from svc_monitor.event_types.base import Data, EventType, clip, event_type
from svc_monitor.events import InstanceEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class AclDenied(InstanceEvent):
    """A new ACL LOG entry, or a known one whose count grew (reason auth/command/key/channel)."""

    reason: str
    username: str
    client_info: str  # addr=host:port of the client, as ACL LOG reports it
    context: str
    object: str
    count: int
    timestamp_s: int  # when the server last updated the entry (epoch seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class AclModified(InstanceEvent):
    """A user was added or removed, or a user's rules changed (ACL LIST diff)."""

    change_type: str  # user_added | user_removed | permissions_changed
    affected_user: str
    modified_by: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged(InstanceEvent):
    """A configuration parameter changed (CONFIG GET diff after a CONFIG SET was seen)."""

    key: str
    old_value: str
    new_value: str
    modified_by: str


def _denied(reason: str, denied: str) -> AclDenied:
    return AclDenied(
        connection_id="c1",
        reason=reason,
        username="app",
        client_info="addr=10.0.0.7:53112",
        context="toplevel",
        object=denied,
        count=3,
        timestamp_s=1_700_000_000,
    )


def _client_blocked(e: AclDenied) -> Data | None:
    """a new ACL LOG entry (or a higher count on one) with reason `auth`"""
    if e.reason != "auth":
        return None
    user, client = clip(e.username), clip(e.client_info)
    return {
        "reason": "auth",
        "username": user,
        "clientInfo": client,
        "count": e.count,
        "timestamp": e.timestamp_s,
        "message": f"Authentication failed for user '{user}' from {client} ({e.count}x)",
    }


CLIENT_BLOCKED = event_type(
    _client_blocked,
    name="client.blocked",
    order=50,
    tier="community",
    example=_denied("auth", "AUTH"),
)


def _acl_violation(e: AclDenied) -> Data | None:
    """a new ACL LOG entry (or a higher count on one) with reason `command`, `key` or `channel`: the
    denial"""
    if e.reason == "auth":
        return None
    user, denied = clip(e.username), clip(e.object)
    return {
        "username": user,
        "command": denied if e.reason == "command" else "",
        "reason": e.reason,
        "object": denied,
        "context": e.context,
        "message": f"ACL denied {e.reason} '{denied}' to user '{user}'",
        "timestamp": e.timestamp_s * 1000,
    }


ACL_VIOLATION = event_type(
    _acl_violation,
    name="acl.violation",
    order=200,
    tier="enterprise",
    example=_denied("command", "flushall"),
)


def _audit_violation(e: AclDenied) -> Data | None:
    """the same ACL LOG entries as `acl.violation`: the audit-trail record with its count"""
    if e.reason == "auth":
        return None
    user, client, denied = clip(e.username), clip(e.client_info), clip(e.object)
    return {
        "username": user,
        "clientInfo": client,
        "violationType": e.reason,
        "violatedCommand": denied if e.reason == "command" else "",
        "object": denied,
        "count": e.count,
        "message": f"User '{user}' from {client} was denied {e.reason} '{denied}' ({e.count}x)",
        "timestamp": e.timestamp_s * 1000,
    }


AUDIT_POLICY_VIOLATION = event_type(
    _audit_violation,
    name="audit.policy.violation",
    order=190,
    tier="enterprise",
    example=_denied("key", "secret:1"),
)


def _acl_modified(e: AclModified) -> Data:
    """`ACL LIST` changed: `user_added`, `user_removed`, `permissions_changed`"""
    user = clip(e.affected_user)
    change = e.change_type.replace("_", " ")
    return {
        "modifiedBy": clip(e.modified_by),
        "changeType": e.change_type,
        "affectedUser": user,
        "message": f"ACL {change}: '{user}'",
        "timestamp": e.at_ms,
    }


ACL_MODIFIED = event_type(
    _acl_modified,
    name="acl.modified",
    order=210,
    tier="enterprise",
    severity="info",  # a change made on purpose
    example=AclModified(
        connection_id="c1", change_type="user_added", affected_user="app", modified_by="unknown"
    ),
)


def _config_changed(e: ConfigChanged) -> Data:
    """a CONFIG SET seen in commandstats, one event
    per changed parameter from a `CONFIG GET *` diff"""
    key = clip(e.key)
    return {
        "configKey": key,
        "oldValue": clip(e.old_value),
        "newValue": clip(e.new_value),
        "modifiedBy": clip(e.modified_by),
        "message": f"Configuration '{key}' changed",
        "timestamp": e.at_ms,
    }


CONFIG_CHANGED = event_type(
    _config_changed,
    name="config.changed",
    order=220,
    tier="enterprise",
    severity="info",  # a change made on purpose
    example=ConfigChanged(
        connection_id="c1",
        key="maxmemory",
        old_value="0",
        new_value="1073741824",
        modified_by="default@10.0.0.7:53112",
    ),
)


# In the order one bus event's notifications come out (table.candidates): a denial's
# acl.violation before its audit.policy.violation.
EVENT_TYPES: tuple[EventType[Any], ...] = (
    CLIENT_BLOCKED,
    ACL_VIOLATION,
    AUDIT_POLICY_VIOLATION,
    ACL_MODIFIED,
    CONFIG_CHANGED,
)
