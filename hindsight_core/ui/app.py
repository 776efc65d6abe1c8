"""The inspector's pages: a Starlette app over one engine, HTML rendered on the server with Jinja2.

Everything is read through the engine's public reads and its read-only inspection views
(:mod:`hindsight_core.inspection`), never the store; a page view changes nothing (the recall playground
runs ``recall(subtree=True, track=False)``, the adapters' recall without its log row and reinforcement).
Writes exist only in writable mode and only as POST from this server's own pages."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

from hindsight_core.clock import to_ts
from hindsight_core.errors import HindsightError, InvalidInputError, UnknownNamespaceError
from hindsight_core.namespaces import within
from hindsight_core.optional import require
from hindsight_core.sharing import grantees_of
from hindsight_core.types import PERSISTENT_LAYERS, Grant, Layer, Memory, Status

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from hindsight_core.engine import Hindsight


class _NoFraming:
    """Pure ASGI middleware: no page of the inspector may be framed by another site (a framed page is
    how a click on someone else's site becomes a click on "Forget")."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed_never(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"],
                                      (b"content-security-policy", b"frame-ancestors 'none'"),
                                      (b"x-frame-options", b"DENY")]
            await send(message)

        await self.app(scope, receive, framed_never)


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: Rows per memory list: an operator narrows with the filters rather than scrolls.
LIST_LIMIT = 200
#: The horizon of "about to go cold" on the health panels.
FADING_DAYS = 7
_DAY = 86_400.0

_TEMPLATES = Path(__file__).parent / "templates"


def _when(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def _date(value: datetime | float | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, int | float):
        value = datetime.fromtimestamp(value, UTC)
    return value.strftime("%Y-%m-%d %H:%M")


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def strength_help(cold_log: float, cold_idle_days: float) -> str:
    """What a memory's strength (``ln A``, its log activation) means, in the words the pages use."""
    return (f"how strongly the memory is held: it rises each time a recall uses it and falls as time passes; "
            f"below {cold_log:g} and idle {cold_idle_days:g} days it goes cold (leaves the recall indexes).")


def plain_reason(reason: str) -> str:
    """A hit's reason, as the engine writes it, with the floor's measures in the pages' words."""
    return reason.replace("evidence z=", "evidence ").replace("keyword coverage=", "keyword match ")


def create_app(engine: Hindsight, *, writable: bool = False, allowed_hosts: list[str] | None = None) -> Starlette:
    """The inspector as an ASGI app. Requests must name a local host (``allowed_hosts``, loopback by
    default): a web page cannot reach it through DNS rebinding. ``writable`` adds forget and consolidate
    buttons; without it those POST routes answer 403."""
    require("starlette", "ui")
    jinja2 = require("jinja2", "ui")
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse
    from starlette.routing import Route

    from hindsight_core.ui.curve import activation_curve
    from hindsight_core.ui.svg import activation_svg

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters.update(when=_when, date=_date, percent=_percent, qs=lambda d: urlencode(d), reason=plain_reason)
    lifecycle = engine.config.lifecycle
    env.globals["strength_help"] = strength_help(lifecycle.cold_log_activation, lifecycle.cold_idle_days)
    hosts = list(allowed_hosts or LOCAL_HOSTS)
    # Every form that writes carries this token; a page of another origin cannot read it.
    token = secrets.token_urlsafe(32)

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(writable=writable, path=request.url.path, token=token, **context)
        return HTMLResponse(html, status_code=status_code)

    def error(request: Request, status_code: int, message: str) -> HTMLResponse:
        return page(request, "error.html", status_code=status_code, message=message, title="Error")

    def now_ts() -> float:
        return to_ts(engine.now())

    def log_now(memory: Memory) -> float:
        return memory.activation.log_at(now_ts(), engine.config.activation.rate(memory.layer))

    def fading(ns: str, days: float) -> list[Memory]:
        return engine.inspection.fading(ns, days, limit=LIST_LIMIT + 1)

    def reads(ns: str) -> list[Grant]:
        """The grants a recall in ``ns`` searches through: to ``ns`` itself or to its root, of a shared
        namespace outside its own subtree (sharing.py: exact names, never prefixes)."""
        return [g for name in grantees_of(ns) for g in engine.grants(name)
                if g.grantee == name and not within(g.namespace, ns)]

    def shared_with(ns: str) -> list[Grant]:
        """The grants of ``ns`` as the shared namespace: who reads its semantic and procedural memories."""
        return [g for g in engine.grants(ns) if g.namespace == ns]

    # -- pages ---------------------------------------------------------------------------------
    def index(request: Request) -> Response:
        stats = engine.stats()
        rows = []
        for ns, ns_stats in sorted(stats.namespaces.items()):
            counts = {layer: sum(s.by_status.values()) for layer, s in ns_stats.layers.items()}
            rows.append({"name": ns, "counts": counts, "total": sum(counts.values()), "stats": ns_stats})
        return page(request, "index.html", title="Namespaces", rows=rows, stats=stats,
                    layers=[layer.value for layer in PERSISTENT_LAYERS])

    def namespace(request: Request) -> Response:
        ns = request.query_params.get("name", "")
        text = request.query_params.get("q", "").strip()
        layer = request.query_params.get("layer") or None
        status = request.query_params.get("status") or None
        horizon = request.query_params.get("fading", "")
        if horizon and not (horizon.isdecimal() and 0 <= int(horizon) <= 3650):
            return error(request, 400, f"fading must be a number of days from 0 to 3650, got {horizon!r}")
        try:
            stats = engine.stats(ns)
            if layer is not None:
                Layer(layer)
            if status is not None:
                Status(status)
        except UnknownNamespaceError as exc:
            return error(request, 404, str(exc))
        except (InvalidInputError, ValueError) as exc:
            return error(request, 400, str(exc))
        if horizon:
            memories = fading(ns, int(horizon))
        else:
            memories = engine.inspection.search(ns, text=text or None, layer=layer, status=status,
                                                limit=LIST_LIMIT + 1)
        more = len(memories) > LIST_LIMIT
        memories = memories[:LIST_LIMIT]
        ns_stats = stats.namespaces[ns]
        return page(
            request, "namespace.html", title=ns, ns=ns, q=text, layer=layer or "", status=status or "",
            memories=[(m, log_now(m)) for m in memories], more=more, ns_stats=ns_stats, stats=stats,
            layers=[v.value for v in PERSISTENT_LAYERS], statuses=[s.value for s in Status],
            cold_log=engine.config.lifecycle.cold_log_activation, horizon=horizon,
            fading_count=len(fading(ns, FADING_DAYS)), fading_days=FADING_DAYS,
            horizon_date=now_ts() + int(horizon or 0) * _DAY, reads=reads(ns), shared_with=shared_with(ns),
        )

    def memory_page(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        try:
            memory = engine.get(memory_id)
        except InvalidInputError as exc:
            return error(request, 400, str(exc))
        if memory is None:
            return error(request, 404, f"no memory {memory_id!r} (never recorded, forgotten or archived)")
        ns = memory.namespace
        sources = engine.inspection.memories(ns, memory.source_ids)
        cited_by = engine.inspection.cited_by(memory)
        chain = engine.history(memory.id)
        predecessors = [link.memory for link in chain.supersedes]
        successors = [link.memory for link in chain.superseded_by]
        engine.flush_recall_log()
        injections = engine.inspection.injections(memory)
        cfg = engine.config
        curve = activation_curve(
            memory, rate=cfg.activation.rate(memory.layer), now=now_ts(), lifecycle=cfg.lifecycle,
            reinforce_weight=cfg.activation.reinforce_weight, injections=injections,
            held=memory.id in engine.inspection.held([memory]),
        )
        return page(
            request, "memory.html", title=f"Memory {memory.id}", m=memory, ns=ns,
            sources=[sources[s] for s in memory.source_ids if s in sources], missing_sources=[
                s for s in memory.source_ids if s not in sources
            ], cited_by=cited_by, predecessors=predecessors, successors=successors, curve=curve,
            chart=activation_svg(curve), injections=injections, log_now=curve.now_log, demotions=chain.demotions,
        )

    def recall_page(request: Request) -> Response:
        from hindsight_core.recall.verdicts import Verdict, verdicts

        ns = request.query_params.get("ns", "")
        query = request.query_params.get("q", "")
        session = request.query_params.get("session") or None
        k_raw = request.query_params.get("k", "")
        only = bool(request.query_params.get("only"))  # this namespace alone, not its tree
        result = None
        contents: dict[str, Memory] = {}
        why: dict[str, Verdict] = {}
        message = ""
        if query.strip():
            k = int(k_raw) if k_raw.strip().isdecimal() else None
            if k_raw.strip() and k is None:
                message = f"k must be a whole number, got {k_raw!r}"
            else:
                try:
                    # as the adapters recall: the namespace's tree, the engine's default k and budget
                    result = engine.recall(query, ns, session_id=session, k=k, explain=True, track=False,
                                           subtree=not only)
                except InvalidInputError as exc:
                    message = str(exc)
            if result is not None and result.trace is not None:
                trace = result.trace
                why = {v.id: v for v in verdicts(result)}
                ids = {c.id for ranked in trace.channels.values() for c in ranked} | {c.id for c in trace.fused}
                ids |= {v.other for v in why.values() if v.other}
                # the tree searched, and the shared namespaces it was granted: never another tenant's
                lent = {g.namespace for g in reads(ns)}
                contents = {mid: m for mid, m in engine.inspection.memories(None, ids).items()
                            if within(m.namespace, ns) or m.namespace in lent}
        return page(request, "recall.html", title=f"Recall — {ns}", ns=ns, q=query, session=session or "",
                    k=k_raw, only=only, result=result, contents=contents, why=why, message=message,
                    recall_cfg=engine.config.recall,
                    status_code=400 if message else 200)

    def health(request: Request) -> Response:
        stats = engine.stats()
        counts = {ns: len(fading(ns, FADING_DAYS)) for ns in stats.namespaces}
        return page(request, "health.html", title="Health", stats=stats, fading_counts=counts,
                    fading_days=FADING_DAYS)

    # -- writes (writable mode only) ------------------------------------------------------------
    def guarded(
        handler: Callable[[Request, dict[str, list[str]]], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """A write runs only for a form of the inspector's own pages: the request comes from its own
        origin (scheme, host and port: a page on ``localhost:3000`` is another site) and carries the
        form token. A request that names no origin at all must carry the token too."""
        async def run(request: Request) -> Response:
            if not writable:
                return PlainTextResponse("read-only inspector: start it with --writable to change memory", 403)
            own = f"{request.url.scheme}://{request.url.netloc}"
            origin = request.headers.get("origin")
            if origin is not None and origin != own:
                return PlainTextResponse(f"cross-origin write refused ({origin})", 403)
            if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
                return PlainTextResponse("cross-site write refused", 403)
            # a plain urlencoded form: no multipart parser needed for a field or two
            form = parse_qs((await request.body()).decode("utf-8", "replace"))
            if not hmac.compare_digest((form.get("token") or [""])[0], token):
                return PlainTextResponse("write refused: the form token is missing or stale (reload the page)", 403)
            return await handler(request, form)

        return run

    async def forget(request: Request, form: dict[str, list[str]]) -> Response:
        import asyncio

        memory_id = request.path_params["memory_id"]
        memory = await asyncio.to_thread(engine.get, memory_id)
        if memory is None:
            return error(request, 404, f"no memory {memory_id!r}")
        await asyncio.to_thread(engine.forget, memory_id)
        return RedirectResponse("/ns?" + urlencode({"name": memory.namespace}), status_code=303)

    async def consolidate(request: Request, form: dict[str, list[str]]) -> Response:
        import asyncio

        ns = (form.get("ns") or [""])[0]
        try:
            report = await asyncio.to_thread(engine.consolidate, ns)
        except HindsightError as exc:
            return error(request, 400, str(exc))
        return page(request, "report.html", title="Consolidation", ns=ns, report=report.model_dump_json(indent=2))

    routes = [
        Route("/", index),
        Route("/ns", namespace),
        Route("/memory/{memory_id}", memory_page),
        Route("/recall", recall_page),
        Route("/health", health),
        Route("/memory/{memory_id}/forget", guarded(forget), methods=["POST"]),
        Route("/consolidate", guarded(consolidate), methods=["POST"]),
    ]
    async def failed(request: Request, exc: Exception) -> Response:
        """A backend failure (a locked or failing database, a closed engine) is a page saying so."""
        status_code = 400 if isinstance(exc, InvalidInputError) else 503
        return error(request, status_code, f"{type(exc).__name__}: {exc}")

    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts), Middleware(_NoFraming)],
        exception_handlers={HindsightError: failed},
    )
    app.state.engine = engine
    app.state.writable = writable
    return app
