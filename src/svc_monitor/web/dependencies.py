"""What a UI route is handed: the services, the shell, and a way to answer with a template."""

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import HTMLResponse

from svc_monitor.api.dependencies import FeaturesDep, ServicesDep
from svc_monitor.errors import Forbidden
from svc_monitor.services import Features, Services
from svc_monitor.web.pages import Page
from svc_monitor.web.rendering import Templates
from svc_monitor.web.shell import CONNECTION_COOKIE, Shell, build_shell
from svc_monitor.web.viewer import Viewer

# Everything the browser loads comes from this service (installs may be air-gapped), and
# nothing runs that the service did not send: no inline scripts, no eval.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
UI_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True, slots=True)
class Ui:
    request: Request
    services: Services
    features: Features
    templates: Templates
    shell: Shell
    viewer: Viewer

    def page(self, page: Page, template: str, **context: Any) -> HTMLResponse:
        """A whole page in the shell; the page's own template extends base.html."""
        return self.fragment(template, page=page, **context)

    def fragment(self, template: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
        """A template on its own: what htmx swaps into a page."""
        body = self.templates.render(
            template, {"shell": self.shell, "viewer": self.viewer, **context}
        )
        return HTMLResponse(body, status_code=status_code, headers=UI_HEADERS)


def get_templates(request: Request) -> Templates:
    templates: Templates = request.app.state.templates
    return templates


async def get_ui(
    request: Request,
    services: ServicesDep,
    features: FeaturesDep,
    templates: Annotated[Templates, Depends(get_templates)],
) -> Ui:
    viewer = Viewer.of(request)
    shell = await build_shell(
        services.connections,
        request.cookies.get(CONNECTION_COOKIE),
        # Admins only when user control is on, as GET /api/connections/discovered.
        discovery=services.discovery if viewer.is_admin else None,
    )
    return Ui(request, services, features, templates, shell, viewer)


UiDep = Annotated[Ui, Depends(get_ui)]


def from_this_page(
    hx_request: Annotated[str | None, Header(include_in_schema=False)] = None,
    sec_fetch_site: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> None:
    """Changes through the UI come from its own pages only (a CSRF guard).

    htmx sends `HX-Request`; another site cannot add that header to a form post without
    a CORS preflight this service never grants, and browsers also say where a request
    came from in `Sec-Fetch-Site`.
    """
    if hx_request != "true" or sec_fetch_site not in (None, "same-origin"):
        raise Forbidden("UI changes are accepted only from svc-monitor's own pages")


FromThisPage = Depends(from_this_page)
