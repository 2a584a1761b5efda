"""The OpenAPI docs page at /api, with Swagger UI served from the installed package.

FastAPI's own docs page loads Swagger UI from a CDN; installs may be air-gapped,
so the assets come from the `swagger-ui-bundle` package instead.
"""

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_ASSETS = "/api/docs-assets"

# Module level, reading the app from the request: FastAPI caches what it learns of each
# endpoint function process-wide (4,096 entries), so a closure over the app would keep
# every app ever built alive (a test run builds about a thousand).
router = APIRouter(include_in_schema=False)


@router.get("/api")
@router.get("/api/")
async def swagger_ui(request: Request) -> HTMLResponse:
    app: FastAPI = request.app
    return get_swagger_ui_html(
        openapi_url=app.openapi_url or "",
        title=f"{app.title} API",
        swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
    )


def mount_docs(app: FastAPI) -> None:
    """Swagger UI at /api for the app's own OpenAPI document (its `openapi_url`)."""
    import swagger_ui_bundle

    app.mount(
        DOCS_ASSETS,
        StaticFiles(directory=str(swagger_ui_bundle.swagger_ui_path)),
        name="docs-assets",
    )
    app.include_router(router)
