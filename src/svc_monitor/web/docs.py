"""The OpenAPI docs page at /api, with Swagger UI served by svc-monitor itself.

FastAPI's own docs page loads Swagger UI from a CDN; installs may be air-gapped,
so the assets are vendored in static/vendor (pinned, with their licence). Swagger UI 5
is the first to read OpenAPI 3.1, the version FastAPI writes: 4.x (what the
`swagger-ui-bundle` package ships) shows "Unable to render this definition" instead.
"""

from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from svc_monitor.web.assets import static_url

DOCS_ASSETS = "/api/docs-assets"
SWAGGER_UI = Path(__file__).parent / "static" / "vendor" / "swagger-ui-5.17.14"

# Module level, reading the app from the request: FastAPI caches what it learns of each
# endpoint function process-wide (4,096 entries), so a closure over the app would keep
# every app ever built alive (a test run builds about a thousand).
router = APIRouter(include_in_schema=False)


@router.get("/api")
@router.get("/api/")
async def swagger_ui(request: Request) -> HTMLResponse:
    app: FastAPI = request.app
    page = get_swagger_ui_html(
        openapi_url=app.openapi_url or "",
        title=f"{app.title} API",
        swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        # Deep links put a link inside each operation's toggle button: a control inside a
        # control, which screen readers and keyboards cannot reach on its own. The
        # highlighter's colours (inline styles) fall below 4.5:1 on its dark background.
        swagger_ui_parameters={"deepLinking": False, "syntaxHighlight": False},
    )
    html = bytes(page.body).decode()
    # FastAPI's page names no language and no main region, and Swagger UI's colours miss
    # the contrast text needs: the page gets both, and our stylesheet after Swagger UI's.
    html = html.replace("<html>", '<html lang="en">', 1)
    html = html.replace('<div id="swagger-ui">', '<main id="swagger-ui">', 1).replace(
        "</div>\n    <script", "</main>\n    <script", 1
    )
    html = html.replace(
        "</head>", f'<link rel="stylesheet" href="{static_url("api-docs.css")}">\n</head>', 1
    )
    return HTMLResponse(html)


def mount_docs(app: FastAPI) -> None:
    """Swagger UI at /api for the app's own OpenAPI document (its `openapi_url`)."""
    app.mount(
        DOCS_ASSETS,
        StaticFiles(directory=SWAGGER_UI),
        name="docs-assets",
    )
    app.include_router(router)
