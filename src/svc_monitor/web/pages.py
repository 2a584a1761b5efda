"""What a UI page is: a path in the navigation with a title.

Adding a page: write `routes/<area>.py` with a `PAGE` and a `router`, its templates in
`templates/<area>/`, and list the module in `ui.PAGE_MODULES` (navigation order).
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Page:
    key: str  # also the template folder and the nav item's id
    path: str
    title: str
    # False for pages that make sense without any connection (settings).
    needs_connection: bool = True
