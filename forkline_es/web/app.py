"""The ASGI application of ``forkline-es serve``: pages and a JSON API over one read-only store.

Every route is a GET that reads through the public ``Store`` API and renders; nothing here
writes. Handlers are ``async`` and call the store directly, so one event loop serialises
every read on the one connection (a local tool: no pool, no threads). Recorded text reaches
the page only through Jinja2's autoescaping, and every response carries a Content-Security-
Policy that allows scripts and styles from this server's /static/ only: recorded text that
slipped into markup still could not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any, Final
from urllib.parse import urlencode

import msgspec
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from forkline_es._gc import gc_paused
from forkline_es._logging import get_logger
from forkline_es.errors import InvalidRequest, RecordError, RunNotRetained, StoreError
from forkline_es.records.plain import plain
from forkline_es.replay import diff_runs
from forkline_es.store import Store
from forkline_es.vocabulary import NONTERMINAL_STATUSES, TERMINAL_OUTCOMES
from forkline_es.web import views

__all__ = ["CSP", "PAGE", "create_app"]

#: Runs on one page of the listing (HTML and API default; the API takes ``limit`` up to MAX_PAGE).
PAGE: Final = 50
MAX_PAGE: Final = 500

#: Scripts, styles and images from this server only; no inline script, no eval, no framing.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

#: The HTTP status of each refusal code: lookups of what is not there are 404 (gone, 410).
_log = get_logger("forkline_es.web")
_STATUS: Final = {"run-not-found": 404, "step-not-found": 404, "run-not-retained": 410}

_json: Final = msgspec.json.Encoder()

STATUSES: Final = sorted(NONTERMINAL_STATUSES | TERMINAL_OUTCOMES)


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("forkline_es.web", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        badge=views.badge, change_text=views.change_text, run_url=views.run_url, diff_url=views.diff_url
    )
    return env


_TEMPLATES: Final = _env()


def _html(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_TEMPLATES.get_template(name).render(**context), status_code=status)


class JSONResponse(Response):
    """JSON encoded by msgspec (the stdlib encoder took 0.25 s for a 2,000-step document)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return _json.encode(content)


def _refusal(request: Request, error: RecordError) -> Response:
    status = _STATUS.get(error.code, 400)
    if isinstance(error, RunNotRetained):
        status = 410
    body = {"error": {"code": error.code, "message": error.message}}
    headers = {"X-Forkline-Code": error.code}
    if request.url.path.startswith("/api/"):
        return JSONResponse(body, status_code=status, headers=headers)
    response = _html("error.html", status, title=error.code, code=error.code, message=error.message)
    response.headers.update(headers)
    return response


Handler = Callable[[Request], Awaitable[Response]]


class SecurityHeaders:
    """Adds ``_HEADERS`` (the CSP first) to every response, pages, API, static files and errors."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)


def _refusals(handler: Handler) -> Handler:
    """A refusal from the store becomes its page (or JSON) with its code and HTTP status.

    The collector is paused while a page is built: the page of an 8,000-entry run allocates
    enough to trigger full collections that walk the whole document again and again (five
    times slower; ``forkline_es._gc``). What a handler builds is freed when it returns; the
    handlers await nothing, so no other request runs meanwhile.
    """

    async def wrapped(request: Request) -> Response:
        try:
            with gc_paused():
                return await handler(request)
        except RecordError as e:
            return _refusal(request, e)

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


def _arg(request: Request, name: str, query: str) -> str:
    """A run id or step path: from the URL path (``/runs/RUN``), else from the query string
    (``/run?id=RUN``, for ids that cannot be a path segment)."""
    value = request.path_params.get(name)
    if value is None:
        value = request.query_params.get(query)
    if value is None:
        raise InvalidRequest(f"this page needs ?{query}=...")
    return str(value)


def _filters(request: Request) -> dict[str, Any]:
    """The listing's filters from the query string, as ``list_runs`` takes them (it checks them)."""
    params = request.query_params
    labels: dict[str, str] = {}
    for text in params.getlist("label"):
        if not text:
            continue
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise InvalidRequest(f"a label filter is NAME=VALUE (e.g. customer=c-42), not {text!r}")
        labels[name] = value
    statuses = [s for s in params.getlist("status") if s]
    return {
        "workflow": params.get("workflow") or None,
        "status": statuses or None,
        "since": params.get("since") or None,
        "until": params.get("until") or None,
        "parent": params.get("parent") or None,
        "labels": labels,
    }


def _limit(request: Request) -> int:
    text = request.query_params.get("limit")
    if text is None or text == "":
        return PAGE
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_PAGE:  # not "²" or "１"
        raise InvalidRequest(f"limit is a whole number from 1 to {MAX_PAGE}, not {text!r}")
    return int(text)


def _page(store: Store, request: Request) -> tuple[list[dict[str, Any]], str | None, dict[str, Any]]:
    """One page of the listing, the id to continue ``before`` (None on the last page), the filters."""
    filters = _filters(request)
    before = request.query_params.get("before") or None
    limit = _limit(request)
    if filters["parent"] is not None:
        filters["parent"] = store.resolve_run_id(filters["parent"])
    listed = store.list_runs(filters.pop("workflow"), **filters, limit=limit + 1, before=before)
    more = len(listed) > limit
    listed = listed[:limit]
    return listed, listed[-1]["id"] if more else None, filters


def _with(request: Request, name: str, value: str) -> str:
    """This page's URL with the query parameter ``name`` set to ``value``."""
    kept = [(k, v) for k, v in request.query_params.multi_items() if k != name and v]
    return f"{request.url.path}?{urlencode([*kept, (name, value)])}"


def _next_link(request: Request, before: str | None) -> str | None:
    return None if before is None else _with(request, "before", before)


def create_app(store: Store, *, allowed_hosts: Sequence[str] | None = None) -> Starlette:
    """The application over ``store`` (open it read-only: the app never writes, and a store
    opened so refuses every write besides).

    ``allowed_hosts``: the only ``Host`` headers answered (others get 400), so that a web
    page elsewhere cannot reach a server on 127.0.0.1 through DNS rebinding; None answers any.
    """

    async def index(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=307)

    @_refusals
    async def runs_page(request: Request) -> Response:
        listed, before, filters = _page(store, request)
        params = request.query_params
        return _html(
            "runs.html",
            title="runs",
            runs=listed,
            next_link=_next_link(request, before),
            statuses=STATUSES,
            chosen=set(params.getlist("status")),
            workflow=params.get("workflow", ""),
            since=params.get("since", ""),
            until=params.get("until", ""),
            labels=params.getlist("label"),
            parent=filters["parent"] or "",
            continued=bool(params.get("before")),
        )

    @_refusals
    async def run_page(request: Request) -> Response:
        run_id = store.resolve_run_id(_arg(request, "run_id", "id"))
        doc = store.get_run_record(run_id)
        entries = doc.get("entries") or []
        timeline = views.timeline_of(doc)
        order = {p: i for i, p in enumerate(timeline.paths)}
        steps = sorted(doc["steps"].values(), key=lambda s: order.get(s["path"], len(order)))
        return _html(
            "run.html",
            title=f"run {run_id}",
            doc=doc,
            run=doc["run"],
            timeline=timeline,
            steps=views.step_rows(steps),
            run_payloads={k: views.slot_view(v) for k, v in doc["payloads"].items()},
            entries=views.entry_rows(entries),
            children=[e for e in entries if e["kind"] == "child"],
        )

    @_refusals
    async def step_page(request: Request) -> Response:
        run_id = store.resolve_run_id(_arg(request, "run_id", "id"))
        path = _arg(request, "path", "path")
        with store.log.snapshot():
            record = store.get_step_record(run_id, path)
            entries = store.get_run_record(run_id).get("entries") or []
        return _html(
            "step.html",
            title=f"step {path}",
            run_id=run_id,
            step=record,
            payloads={k: views.slot_view(v) for k, v in record["payloads"].items()},
            attempts=views.attempts_of(entries, path),
            children=[e for e in entries if e["kind"] == "child" and e["path"] == path],
        )

    def _diff(request: Request) -> tuple[str, str, Any]:
        a = store.resolve_run_id(_arg(request, "a", "a"))
        b = store.resolve_run_id(_arg(request, "b", "b"))
        params = request.query_params
        strict = params.get("strict") in ("1", "true", "on")
        times = params.get("times") in ("1", "true", "on")
        ignore = tuple(p for p in params.getlist("ignore") if p)
        return a, b, diff_runs(store, a, b, strict=strict, ignore=ignore, times=times)

    @_refusals
    async def diff_page(request: Request) -> Response:
        with store.log.snapshot():
            a, b, result = _diff(request)
            doc_a, doc_b = store.get_run_record(a), store.get_run_record(b)
        data = result.to_json(all=True)
        first = data["first"]
        return _html(
            "diff.html",
            title=f"diff {a} {b}",
            a=a,
            b=b,
            diff=data,
            first=first,
            others=[d for d in data["divergences"] if d != first],
            rows=views.diff_rows(doc_a, doc_b, first or next(iter(data["divergences"]), None)),
            strict=result.strict,
            strict_link=_with(request, "strict", "1"),
        )

    @_refusals
    async def api_runs(request: Request) -> Response:
        listed, before, _ = _page(store, request)
        return JSONResponse({"runs": listed, "next_before": before})

    @_refusals
    async def api_run(request: Request) -> Response:
        run_id = store.resolve_run_id(_arg(request, "run_id", "id"))
        doc = store.get_run_record(run_id)
        return JSONResponse(plain(doc) if request.query_params.get("plain") == "1" else doc)

    @_refusals
    async def api_step(request: Request) -> Response:
        run_id = store.resolve_run_id(_arg(request, "run_id", "id"))
        record = store.get_step_record(run_id, _arg(request, "path", "path"))
        return JSONResponse(plain(record) if request.query_params.get("plain") == "1" else record)

    @_refusals
    async def api_verify(request: Request) -> Response:
        run_id = store.resolve_run_id(_arg(request, "run_id", "id"))
        return JSONResponse(store.verify_run(run_id).to_dict())

    @_refusals
    async def api_diff(request: Request) -> Response:
        with store.log.snapshot():
            _, _, result = _diff(request)
        return JSONResponse(result.to_json(all=True))

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code, message = (
            ("not-found", "no such page") if status == 404 else ("read-only", "only GET is served")
        )
        headers = {"X-Forkline-Code": code} | ({} if status == 404 else {"Allow": "GET, HEAD"})
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": {"code": code, "message": message}}, status, headers=headers)
        response = _html("error.html", status, title=code, code=code, message=message)
        response.headers.update(headers)
        return response

    async def store_error(request: Request, exc: Exception) -> Response:
        message = str(exc)
        headers = {"X-Forkline-Code": "store-error"}
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": {"code": "store-error", "message": message}}, 500, headers=headers)
        response = _html("error.html", 500, title="store error", code="store-error", message=message)
        response.headers.update(headers)
        return response

    async def internal_error(request: Request, exc: Exception) -> Response:
        """A fault of ours, not the store's: said plainly, with the security headers (this
        handler answers outside every middleware, ``SecurityHeaders`` included)."""
        _log.error("serve_failed", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
        response = PlainTextResponse("Internal Server Error", 500, headers=dict(_HEADERS))
        response.headers["X-Forkline-Code"] = "internal-error"
        return response

    static = StaticFiles(directory=str(resources.files("forkline_es.web") / "static"))
    app = Starlette(
        routes=[
            Route("/", index),
            Route("/runs", runs_page),
            Route("/runs/{run_id}", run_page),
            Route("/runs/{run_id}/steps/{path:path}", step_page),
            Route("/diff/{a}/{b}", diff_page),
            # the same pages for ids that cannot be a URL path segment (views.run_url)
            Route("/run", run_page),
            Route("/run/steps", step_page),
            Route("/diff", diff_page),
            Route("/api/runs", api_runs),
            Route("/api/runs/{run_id}", api_run),
            Route("/api/runs/{run_id}/verify", api_verify),
            Route("/api/runs/{run_id}/steps/{path:path}", api_step),
            Route("/api/diff/{a}/{b}", api_diff),
            Route("/api/run", api_run),
            Route("/api/run/verify", api_verify),
            Route("/api/run/steps", api_step),
            Route("/api/diff", api_diff),
            Mount("/static", app=static, name="static"),
        ],
        exception_handlers={
            404: http_error,
            405: http_error,
            StoreError: store_error,
            Exception: internal_error,
        },
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or ["*"]),
        ],
    )

    return app
