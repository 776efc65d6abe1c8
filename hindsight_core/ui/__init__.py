"""``hindsight ui``: a local memory inspector in the browser (``pip install 'hindsight-memory[ui]'``).

Pages: namespaces with counts, a namespace's memories by layer and status with a substring search, a
memory's page (sources, supersedes chain, activation curve with its cold and archive dates), a recall
playground (each channel's candidates, fusion, the floor's verdict, the injected prompt) and health
figures. Served on 127.0.0.1, read-only unless ``writable=True``; no asset comes from the network."""

from __future__ import annotations

import threading
import webbrowser
from typing import TYPE_CHECKING

from hindsight_core.optional import require

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from hindsight_core.engine import Hindsight

__all__ = ["create_app", "serve"]


def create_app(engine: Hindsight, *, writable: bool = False, allowed_hosts: list[str] | None = None) -> Starlette:
    """The inspector as an ASGI app (see :func:`hindsight_core.ui.app.create_app`)."""
    from hindsight_core.ui.app import create_app as build

    return build(engine, writable=writable, allowed_hosts=allowed_hosts)


def serve(
    engine: Hindsight, *, host: str = "127.0.0.1", port: int = 8765, writable: bool = False,
    open_browser: bool = False,
) -> None:
    """Serve the inspector until interrupted (blocking). Binding another address than loopback lets
    the pages be reached from it: requests are then accepted for that host name too."""
    uvicorn = require("uvicorn", "ui")
    hosts = ["*"] if host in ("0.0.0.0", "::") else sorted({"127.0.0.1", "localhost", "::1", "[::1]", host})
    app = create_app(engine, writable=writable, allowed_hosts=hosts)
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/"
    print(f"Hindsight inspector on {url} ({'writable' if writable else 'read-only'}); Ctrl+C stops it")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning")
