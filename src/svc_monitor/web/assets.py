"""The UI's static files: our own script and styles, and the vendored libraries.

Everything is served from the package (installs may be air-gapped); vendor/ keeps
each library under its pinned version with its licence.
"""

from html import escape
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from svc_monitor import __version__

STATIC = Path(__file__).parent / "static"
STATIC_PREFIX = "/static"


def static_url(path: str) -> str:
    """A static file's URL; the version in it makes a new release bypass old caches."""
    return f"{STATIC_PREFIX}/{path}?v={__version__}"


def mount_static(app: FastAPI) -> None:
    app.mount(STATIC_PREFIX, StaticFiles(directory=STATIC), name="static")


_PLAIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">{refresh}
<title>{title} · svc-monitor</title>
<link rel="icon" href="{icon}"><link rel="stylesheet" href="{css}"></head>
<body class="plain"><main><h1>{title}</h1><p>{text}</p></main></body></html>
"""


def refused_page(message: str) -> HTMLResponse:
    """A page the viewer's role may not open (403), said in words, with a way back."""
    html = _PLAIN_PAGE.format(
        refresh="",
        title="Not allowed",
        text=f'{escape(message)}. <a href="/">Go to the dashboard</a>.',
        icon=static_url("favicon.svg"),
        css=static_url("app.css"),
    )
    return HTMLResponse(html, 403, headers={"Cache-Control": "no-store"})


def plain_page(*, starting: bool) -> HTMLResponse:
    """A page that needs no template engine: shown while the UI loads, and for 404s."""
    if starting:
        # 200, not 503: the page works (it reloads itself), and a browser would log a 503
        # as an error; /api answers 503 with Retry-After meanwhile, for scripts.
        title, text, status = "Starting", "svc-monitor is starting; this page reloads itself.", 200
    else:
        title, status = "Not found", 404
        text = 'No page here. <a href="/">Go to the dashboard</a>.'
    html = _PLAIN_PAGE.format(
        refresh='\n<meta http-equiv="refresh" content="1">' if starting else "",
        title=title,
        text=text,
        icon=static_url("favicon.svg"),
        css=static_url("app.css"),
    )
    return HTMLResponse(html, status, headers={"Cache-Control": "no-store"})
