"""``farm view``: a read-only web app over the history and the sweeps in flight (aiohttp's server).

Only GET routes: the sweeps list (``/``, filtered by tag, agent, status, dates), a sweep
(``/sweeps/ID``: the full HTML report from its run journal while the file is kept, with one page of
its results; the page's script reads the others from ``/api/sweeps/ID/cases`` and its export from
``/api/sweeps/ID/report.json``; else the history's figures), two sweeps compared
(``/compare?base=…&head=…``), a case's trend (``/case?id=…``), the distributed sweeps in flight
(``/live``, ``/api/live``). On an address that is not loopback every request needs HTTP basic auth
(``FARM_VIEW_USER``/``FARM_VIEW_PASSWORD``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import html
import ipaddress
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any
from urllib.parse import quote

from aiohttp import web

from farm.errors import FarmError, SettingsError
from farm.reports.html_kit import PAGED_POLICY, REPORT_POLICY, template_environment
from farm.view.data import SweepFilter, ViewData
from farm.view.pages import render
from farm.view.table import TableQuery

__all__ = ["LIVE_REFRESH_S", "Credentials", "build_app", "credentials_for"]

LIVE_REFRESH_S = 2
"""Seconds between refreshes of the in-flight page."""
STATUSES = ("complete", "stopped", "failed", "abandoned")
DATA_KEY = web.AppKey("data", ViewData)
LAYOUT_KEY = web.AppKey("layout", dict)
Credentials = tuple[str, str]
PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'"
"""The view's own pages (``farm.view.pages``, which also carry it in a meta tag): no script, no fetch;
their forms submit to the view itself."""
REPORT_CSP = REPORT_POLICY
"""The farm's self-contained reports (comparison, trend): the policy their meta tag carries."""
PAGED_REPORT_CSP = PAGED_POLICY
"""A sweep's report with its results paged: also fetches from the view itself (its meta tag says so too)."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def credentials_for(address: str, env: dict[str, str] | None = None) -> Credentials | None:
    """None on a loopback address; else the basic-auth pair, which must be set (SettingsError)."""
    if is_loopback(address):
        return None
    env = dict(os.environ) if env is None else env
    user, password = env.get("FARM_VIEW_USER", ""), env.get("FARM_VIEW_PASSWORD", "")
    if not user or not password:
        raise SettingsError(f"--address {address}: not a loopback address, so farm view requires basic auth: "
                            "set FARM_VIEW_USER and FARM_VIEW_PASSWORD")
    return user, password


def _auth_middleware(expected: Credentials) -> Any:
    wanted = f"{expected[0]}:{expected[1]}".encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        try:
            given = base64.b64decode(token, validate=True) if scheme.lower() == "basic" else b""
        except (binascii.Error, ValueError):
            given = b""
        if not hmac.compare_digest(given, wanted):
            raise web.HTTPUnauthorized(headers={"WWW-Authenticate": 'Basic realm="farm view"'})
        return await handler(request)

    return check


def _loopback_host_middleware() -> Any:
    """Without auth (a loopback address), only requests sent to a loopback name: a web page from
    elsewhere cannot read the history by DNS rebinding (its requests carry its own Host)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_loopback(request.url.host or ""):
            raise web.HTTPMisdirectedRequest(text="farm view: this server answers only to a loopback address")
        return await handler(request)

    return check


_BODY = re.compile(r"<body[^>]*>", re.IGNORECASE)


def _report(text: str, *links: tuple[str, str], policy: str = REPORT_CSP) -> web.Response:
    """One of the farm's self-contained HTML reports, under the policy its own meta tag states, with
    a line of links back into the view at its top (plain links: no style or script the policy refuses)."""
    nav = " · ".join(f'<a href="{html.escape(href)}">{html.escape(label)}</a>'
                     for href, label in (("/", "← all sweeps"), *links))
    found = _BODY.search(text)
    if found is not None:
        text = f'{text[:found.end()]}<nav id="farm-view-nav">{nav}</nav>{text[found.end():]}'
    return web.Response(text=text, content_type="text/html", headers={"Content-Security-Policy": _framed(policy)})


async def favicon(request: web.Request) -> web.Response:
    """No icon (and no 404 in every page's log)."""
    return web.Response(status=204)


def _page(request: web.Request, page: str, title: str, status: int = 200, **data: Any) -> web.Response:
    text = render(page, title=title, layout=request.app[LAYOUT_KEY], csp=PAGE_CSP, **data)
    return web.Response(text=text, status=status, content_type="text/html")


def _framed(policy: str) -> str:
    return f"{policy}; frame-ancestors 'none'"  # honoured only in a header, not in a meta tag


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every answer (pages, JSON, errors, the auth challenge): never framed, never sniffed, and under
    the view pages' policy unless it is a report with its own."""
    response.headers.setdefault("Content-Security-Policy", _framed(PAGE_CSP))
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"


async def _read(request: web.Request, read: Callable[[ViewData], Any]) -> Any:
    """A blocking read of the history or Redis, off the event loop."""
    return await asyncio.to_thread(read, request.app[DATA_KEY])


async def index(request: web.Request) -> web.Response:
    query = request.query
    chosen = SweepFilter(**{k: query.get(k, "").strip() for k in ("tag", "agent", "status", "since", "until")})
    try:
        sweeps = await _read(request, lambda data: data.sweeps(chosen))
    except FarmError as exc:
        return _page(request, "index", "Sweeps", 400, error=exc.message, sweeps=[], f=chosen, statuses=STATUSES)
    return _page(request, "index", "Sweeps", sweeps=sweeps, f=chosen, statuses=STATUSES,
                 filtered=any(asdict(chosen).values()), base_id=like_for_like_base(sweeps))


def like_for_like_base(sweeps: list[Any]) -> str | None:
    """The base preselected beside the newest sweep (the head): the newest earlier sweep of the same
    agent and connector, so the default comparison compares like with like; else the second newest."""
    if len(sweeps) < 2:
        return None
    head = sweeps[0]
    same = next((s for s in sweeps[1:] if (s.agent, s.connector) == (head.agent, head.connector)), sweeps[1])
    return str(same.sweep_id)


async def sweep(request: web.Request) -> web.Response:
    sweep_id = request.match_info["sweep_id"]
    figures = request.query.get("figures") == "1"  # the history's figures, each case linked to its trend
    found = await _read(request, lambda data: data.sweep(sweep_id, figures=figures))
    if found is None:
        return _page(request, "error", "Not found", 404, error=f"no recorded sweep {sweep_id!r}")
    if found.report_html is not None:
        return _report(found.report_html, (f"/sweeps/{quote(sweep_id, safe='')}?figures=1", "case trends"),
                       policy=PAGED_REPORT_CSP)
    return _page(request, "sweep", f"Sweep {found.info.sweep_id}", s=found.info, cases=found.cases,
                 has_report=figures)


def _not_kept(sweep_id: str) -> web.Response:
    return web.json_response({"error": f"no run journal of a recorded sweep {sweep_id!r} here"}, status=404)


async def sweep_cases(request: web.Request) -> web.Response:
    """One page of a sweep's results table (JSON: ``farm.view.table.CaseTable.page_json``)."""
    sweep_id = request.match_info["sweep_id"]
    try:
        query = TableQuery.parse(request.query)
    except FarmError as exc:
        return web.json_response({"error": exc.message}, status=400)
    paged = await _read(request, lambda data: data.paged(sweep_id))
    if paged is None:
        return _not_kept(sweep_id)
    return web.Response(text=paged.table.page_json(query), content_type="application/json")


async def sweep_json(request: web.Request) -> web.StreamResponse:
    """The sweep's whole report as JSON (the page's export button), written a few hundred cases at a time."""
    sweep_id = request.match_info["sweep_id"]
    paged = await _read(request, lambda data: data.paged(sweep_id))
    if paged is None:
        return _not_kept(sweep_id)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", sweep_id)
    answer = web.StreamResponse(headers={"Content-Type": "application/json; charset=utf-8",
                                         "Content-Disposition": f'attachment; filename="farm-report-{name}.json"'})
    await answer.prepare(request)
    for chunk in paged.json_chunks():
        await answer.write(chunk.encode())
    await answer.write_eof()
    return answer


async def compare(request: web.Request) -> web.Response:
    base, head = request.query.get("base", ""), request.query.get("head", "")
    if not base or not head:
        return _page(request, "error", "Compare", 400, error="choose two sweeps on the list (base and head)")
    try:
        return _report(await _read(request, lambda data: data.compare_html(base, head)))
    except FarmError as exc:
        return _page(request, "error", "Compare", 404, error=exc.message)


async def case(request: web.Request) -> web.Response:
    case_id = request.query.get("id", "")
    page = await _read(request, lambda data: data.trend_html(case_id)) if case_id else None
    if page is None:
        return _page(request, "error", "Not found", 404, error=f"no recorded sweep ran case {case_id!r}")
    return _report(page)


async def live(request: web.Request) -> web.Response:
    data = request.app[DATA_KEY]
    try:
        sweeps = await _read(request, lambda d: d.in_flight())
    except (FarmError, OSError) as exc:
        message = exc.message if isinstance(exc, FarmError) else str(exc)
        return _page(request, "live", "In flight", 503, error=f"cannot read the sweeps in flight: {message}",
                     sweeps=[], broker=data.broker, refresh=LIVE_REFRESH_S)
    return _page(request, "live", "In flight", sweeps=sweeps, broker=data.broker, refresh=LIVE_REFRESH_S)


async def live_json(request: web.Request) -> web.Response:
    try:
        return web.json_response(await _read(request, lambda d: d.in_flight()))
    except (FarmError, OSError) as exc:
        message = exc.message if isinstance(exc, FarmError) else str(exc)
        return web.json_response({"error": f"cannot read the sweeps in flight: {message}"}, status=503)


def build_app(data: ViewData, *, credentials: Credentials | None, flower_url: str | None) -> web.Application:
    for name in ("report.html.j2", "charts.html.j2"):  # compiled now, not by a sweep's first page
        template_environment().get_template(name)
    app = web.Application(middlewares=[_auth_middleware(credentials) if credentials else _loopback_host_middleware()])
    app.on_response_prepare.append(_security_headers)
    app[DATA_KEY] = data
    app[LAYOUT_KEY] = {"live": bool(data.broker), "flower": flower_url.rstrip("/") if flower_url else None}
    app.add_routes([web.get("/", index), web.get("/favicon.ico", favicon), web.get("/sweeps/{sweep_id}", sweep),
                    web.get("/api/sweeps/{sweep_id}/cases", sweep_cases),
                    web.get("/api/sweeps/{sweep_id}/report.json", sweep_json), web.get("/compare", compare),
                    web.get("/case", case), web.get("/live", live), web.get("/api/live", live_json)])
    return app
