"""The grading service's application on FastAPI: middleware, errors, static files, and its three parts.

* judge.service.api    the JSON API: submissions (and their events and plot), problems, the leaderboard,
                       ``/me``, ``/health``; OpenAPI at ``/openapi.json``, Swagger UI at ``/docs``;
* judge.service.pages  the pages under ``/ui`` (Jinja2 templates in ``templates/``, ``static/app.js`` and
                       ``style.css``: no framework, nothing from another site; a strict Content-Security-Policy
                       says so to the browser), the login and the display name;
* judge.service.staff  the staff's results, CSV and tools (extensions, overrides, regrades, which submission
                       counts), as API calls and on the staff page.

Every error, unknown routes included, is ``{"error": "one line"}`` with 400 (bad request), 401 (no or a
wrong token), 403 (not yours to ask), 404, 405, 411 (no Content-Length), 413 (too large), 429 (rate
limit; ``Retry-After``) or 500; the pages answer an error page instead.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.service.site import ServiceError, Site

HERE = Path(__file__).resolve().parent
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# Swagger UI sets style attributes on its elements; its scripts are this site's files too.
DOCS_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


class BodyLimit:
    """Refuse a request body over LIMIT bytes before reading it (a body must say its length)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = dict(scope["headers"])
            length = headers.get(b"content-length")
            chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
            problem = None
            if length is None and chunked:
                problem = (411, "a request body needs a Content-Length")
            elif length is not None:
                try:
                    if int(length) > self.limit:
                        problem = (413, f"the request is over {self.limit >> 10} KiB")
                except ValueError:
                    problem = (400, "a bad Content-Length")
            if problem is not None:
                response = JSONResponse({"error": problem[1]}, status_code=problem[0])
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class SecurityHeaders:
    """Headers every response carries, a Content-Security-Policy included (only this site's files)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        csp = DOCS_CSP if scope["path"] == "/docs" else CSP

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                extra = [
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"),
                    (b"x-frame-options", b"DENY"),
                    (b"content-security-policy", csp.encode()),
                ]
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        return await self.app(scope, receive, send_with_headers)


def create_app(service) -> FastAPI:
    """The FastAPI app of SERVICE (judge.service.server.Service): its store, auth, runner and config."""
    from judge.service import api, pages, staff

    store, runner = service.store, service.runner

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        runner.recover()
        runner.start()
        try:
            yield
        finally:
            await run_in_threadpool(runner.stop)
            store.close()

    app = FastAPI(
        title="triton-judge grading service",
        version="1",
        description="Submit Triton kernels (or answers files) and read their judging. Authenticate "
        "with a bearer token (staff, or a student's from the tokens file).",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimit, limit=service.config.max_upload * 4 // 3 + (64 << 10))
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters["when"] = _when
    templates.env.filters["num"] = _num
    templates.env.globals["speed_columns"] = _speed_columns
    site = Site(service, templates)
    _errors(app, site)
    api.register(app, site)
    pages.register(app, site)
    staff.register(app, site)
    return app


def _errors(app: FastAPI, site: Site) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError):
        if request.url.path.startswith("/ui"):
            if exc.code == 401:
                return RedirectResponse(f"/ui/login?next={request.url.path}", status_code=303)
            who = await run_in_threadpool(site.page_identity, request)  # the page keeps its header
            return site.render(
                request,
                "error.html",
                who,
                status_code=exc.code,
                headers=exc.headers,
                message=exc.message,
                code=exc.code,
            )
        return JSONResponse({"error": exc.message}, status_code=exc.code, headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        message = {404: "no such page or call", 405: f"{request.method} is not allowed here"}.get(
            exc.status_code, str(exc.detail)
        )
        return await service_error(request, ServiceError(exc.status_code, message, getattr(exc, "headers", None)))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        return await service_error(
            request,
            ServiceError(400, f"malformed request: {where + ': ' if where else ''}{first.get('msg', 'invalid')}"),
        )

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        site.service.runner.log(f"internal error at {request.method} {request.url.path}: {type(exc).__name__}: {exc}")
        return JSONResponse({"error": "internal error of the service (its log says more)"}, status_code=500)


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        t = dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return t.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value) -> str:
    """A score for people: 20 rather than 20.0, 12.35 rather than 12.3456."""
    if not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    return f"{round(float(value), 2):g}"


def _speed_columns(speed: dict):
    from judge.timing.render import speed_columns

    return speed_columns(speed)
