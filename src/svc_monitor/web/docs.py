"""The OpenAPI docs page at /api, with Swagger UI served from the installed package.

FastAPI's own docs page loads Swagger UI from a CDN; installs may be air-gapped,
so the assets come from the `swagger-ui-bundle` package instead.
"""

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_ASSETS = "/api/docs-assets"


def mount_docs(app: FastAPI, *, openapi_url: str) -> None:
    import swagger_ui_bundle

    app.mount(
        DOCS_ASSETS,
        StaticFiles(directory=str(swagger_ui_bundle.swagger_ui_path)),
        name="docs-assets",
    )
    router = APIRouter(include_in_schema=False)

    @router.get("/api")
    @router.get("/api/")
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        )

    app.include_router(router)
