"""What the agent runs for the service: read commands only, decided here, beside the
instance, so a service that is compromised still cannot write
(docs/features/agent.md#what-the-agent-runs).

The browser CLI's read list for members (console/cli/policy.py), plus what the polls and
live views read that the CLI keeps from members because its answers can carry secrets
(CONFIG GET, ACL LIST, CLIENT LIST): the service redacts those before anyone sees them,
as it does for a direct connection. Everything else is refused with a NOPERM error and
counted; nothing refused is ever sent to the instance.
"""

from dataclasses import dataclass

from svc_monitor.auth.models import Role
from svc_monitor.console.cli.policy import command_name, decide

# Read by the polls, detectors and live views, beyond the CLI's read list.
POLLS = frozenset(
    {
        "CONFIG GET", "ACL LIST", "ACL LOG", "ACL WHOAMI", "ACL USERS", "ACL CAT",
        "CLIENT LIST", "CLIENT INFO", "CLIENT ID", "CLIENT GETNAME", "MODULE LIST",
        "DUMP", "FT._LIST", "FT.INFO", "FT.CONFIG", "INFO",
    }
)  # fmt: skip

# What the engine client says on every new connection about itself: the agent has named its
# own connection and chosen its database, so these are answered without the instance.
LOCAL = {"CLIENT SETNAME": b"+OK\r\n"}


@dataclass(frozen=True, slots=True)
class Ruling:
    name: str
    run: bool
    local_reply: bytes | None = None
    reason: str | None = None


def rule(words: list[bytes]) -> Ruling:
    name, _ = command_name(words)
    local = LOCAL.get(name)
    if local is not None:
        return Ruling(name, False, local_reply=local)
    if name == "SELECT" and words[1:] == [b"0"]:
        return Ruling(name, False, local_reply=b"+OK\r\n")
    if name in POLLS:
        return Ruling(name, True)
    decision = decide(words, role=Role.MEMBER, unsafe=False)
    if decision.allowed:
        return Ruling(name, True)
    return Ruling(
        name, False, reason=f"NOPERM the svc-monitor agent runs read commands only; {name} refused"
    )
