"""What a UI page is: a path in the navigation with a title.

Adding a page: write `routes/<area>.py` with a `PAGE` and a `router`, its templates in
`templates/<area>/`, and list the module in `ui.PAGE_MODULES` (navigation order).
"""

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Page:
    key: str  # also the template folder and the nav item's id
    path: str
    title: str
    # False for pages that make sense without any connection (settings).
    needs_connection: bool = True
    # Who sees it in the navigation (auth/roles.py RULES decides who may open it).
    audience: Literal["everyone", "members", "admins"] = "everyone"
    # Sends the instance commands (SLOWLOG, CLIENT LIST, the CLI...): a push connection,
    # which svc-monitor never dials, shows shell/needs_live.html in its place.
    live_only: bool = False


# The charts' time-range picker on every page: key -> (label, window in ms).
RANGES = {
    "15m": ("15 min", 15 * 60_000),
    "1h": ("1 hour", 3_600_000),
    "6h": ("6 hours", 6 * 3_600_000),
    "24h": ("24 hours", 24 * 3_600_000),
    "7d": ("7 days", 7 * 24 * 3_600_000),
}
