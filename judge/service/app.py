"""The grading service's application: the JSON API and the pages, on FastAPI.

The API (OpenAPI at ``/docs`` and ``/openapi.json``):

* ``POST /submissions``: a submission in (JSON: ``problem``, ``filename``, ``source`` in base64 or ``text``;
  staff may add ``student`` and ``seed``), 202 with the job's id at once;
* ``GET /submissions/{id}``: its status (queued, with its place; running, with the group in progress;
  done) and, once done, the report its reader may see; ``GET /submissions``: one's own (staff: all);
* ``GET /submissions/{id}/events``: the same as server-sent events, until it is done;
* ``GET /submissions/{id}/plot.png``: the speed plot of ``--plot``, when the report has timed shapes;
* ``GET /problems``, ``GET /problems/{id}`` (with the statement), ``GET /problems/{id}/skeleton``;
* ``GET /leaderboard/{problem}``: each student's best accepted submission, fastest first;
* ``GET /staff/results`` and ``GET /staff/results.csv``: the roster's best results (``judge grade --csv``);
* ``GET /health``; ``POST /grade``, the old blocking call, kept for bundles built before the job API.

Errors are ``{"error": "one line"}`` with 400 (bad request), 401 (no or a wrong token), 403 (not yours
to ask), 404, 411 (no Content-Length), 413 (too large), 429 (rate limit; ``Retry-After``).

The pages live under ``/ui`` (Jinja2 templates in ``templates/``, ``static/app.js`` and ``style.css``:
no framework, nothing from another site; a strict Content-Security-Policy says so to the browser).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime as dt
import hashlib
import io
import json
import secrets
import threading
from pathlib import Path, PurePath
from typing import Union

from fastapi import Depends, FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, \
    Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from judge.grading.roster import STUDENT_NAME
from judge.problems import Problem, all_problems, find_problem
from judge.service import views
from judge.service.auth import COOKIE, Identity, RateLimited, check_rate

HERE = Path(__file__).resolve().parent
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


# ---------------------------------------------------------------------- the API's documents


class SubmissionIn(BaseModel):
    problem: Union[int, str] = Field(description="The problem's id or slug, e.g. 93 or vector-add.")
    filename: str | None = Field(None, description="The file's name (default submission.py, or .toml for an "
                                                   "answers problem).")
    source: str | None = Field(None, description="The file's bytes in base64 (or give text).")
    text: str | None = Field(None, description="The file's text (instead of source).")
    student: str | None = Field(None, description="Staff only: submit on behalf of this student.")
    seed: int | None = Field(None, ge=0, description="Staff only: the judge seed (the --forward clients send "
                                                     "the one their rubric derives); default: the service's.")


class Accepted(BaseModel):
    id: str
    status: str
    url: str
    events: str
    page: str


class Error(BaseModel):
    error: str


ERRORS = {code: {"model": Error} for code in (400, 401, 403, 404, 413, 429)}


class ServiceError(Exception):
    def __init__(self, code: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.code, self.message, self.headers = code, message, headers or {}


# ---------------------------------------------------------------------- middleware


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
    """Headers every response carries; the pages also a Content-Security-Policy (only this site's files)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        docs = scope["path"] in ("/docs", "/docs/oauth2-redirect")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"),
                         (b"x-frame-options", b"DENY")]
                if not docs:  # Swagger UI's page starts itself with an inline script
                    extra.append((b"content-security-policy", CSP.encode()))
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        return await self.app(scope, receive, send_with_headers)


# ---------------------------------------------------------------------- the app


def create_app(service) -> FastAPI:
    """The FastAPI app of SERVICE (judge.service.server.Service): its store, auth, runner and config."""
    config, store, auth, runner = service.config, service.store, service.auth, service.runner
    problems = {p.id: p for p in all_problems()}

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        runner.recover()
        runner.start()
        try:
            yield
        finally:
            await run_in_threadpool(runner.stop)
            store.close()

    app = FastAPI(title="triton-judge grading service", version="1",
                  description="Submit Triton kernels (or answers files) and read their judging. Authenticate "
                              "with a bearer token (staff, or a student's from the tokens file).",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.add_middleware(BodyLimit, limit=config.max_upload * 4 // 3 + (64 << 10))
    app.add_middleware(SecurityHeaders)
    _mount_docs(app)  # before /static: its files are under /static/swagger
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.filters["when"] = _when
    templates.env.filters["num"] = _num
    templates.env.globals["speed_columns"] = _speed_columns
    bearer = HTTPBearer(auto_error=False, description="A staff or student token")
    plot_lock = threading.Lock()
    statements: dict[int, str] = {}

    # -------------------------------------------------------------- who is asking

    def who_is(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Identity | None:
        token = creds.credentials if creds is not None else request.cookies.get(COOKIE)
        return auth.identify(token)

    def api_user(who: Identity | None = Depends(who_is)) -> Identity:
        if who is None:
            raise ServiceError(401, "missing or wrong token", {"WWW-Authenticate": "Bearer"})
        return who

    def staff_user(who: Identity = Depends(api_user)) -> Identity:
        if not who.staff:
            raise ServiceError(403, "staff only")
        return who

    # -------------------------------------------------------------- errors

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError):
        if request.url.path.startswith("/ui"):
            if exc.code == 401:
                return RedirectResponse(f"/ui/login?next={request.url.path}", status_code=303)
            who = auth.identify(request.cookies.get(COOKIE))  # the page keeps its header (who, log out)
            return templates.TemplateResponse(request, "error.html", _ctx(request, who, message=exc.message,
                                                                            code=exc.code),
                                              status_code=exc.code, headers=exc.headers)
        return JSONResponse({"error": exc.message}, status_code=exc.code, headers=exc.headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException):
        return await service_error(request, ServiceError(exc.status_code, str(exc.detail), exc.headers))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        return await service_error(request, ServiceError(400, f"malformed request: {where + ': ' if where else ''}"
                                                              f"{first.get('msg', 'invalid')}"))

    # -------------------------------------------------------------- jobs

    def problem_or_404(key) -> Problem:
        problem = find_problem(str(key))
        if problem is None or problem.id not in problems:
            raise ServiceError(404, f"unknown problem '{key}'; valid: {', '.join(map(str, problems))}")
        return problem

    def submit(who: Identity, problem_key, filename: str | None, data: bytes, *, student: str | None = None,
               seed: int | None = None) -> dict:
        problem = find_problem(str(problem_key))
        if problem is None or problem.id not in problems:
            raise ServiceError(400, f"unknown problem '{problem_key}'; valid: {', '.join(map(str, problems))}")
        if len(data) > config.max_upload:
            raise ServiceError(413, f"the file is over {config.max_upload >> 10} KiB")
        name = PurePath(str(filename or "")).name
        if not name.endswith(problem.suffix) or name.startswith(".") or len(name) > 128:
            name = f"submission{problem.suffix}"
        owner = who.name
        if student is not None and student != who.name:
            if not who.staff:
                raise ServiceError(403, "only staff may submit for someone else")
            if not STUDENT_NAME.match(student):
                raise ServiceError(400, "student must be 1-128 letters, digits or ._@+-")
            owner = student
        if seed is not None:
            if not who.staff:
                raise ServiceError(403, "only staff may choose the seed")
            if seed == service.seeds.get(problem.id):
                seed = None  # the service's own: the course's record
        try:
            check_rate(store, who, config.rate, config.max_pending)
        except RateLimited as exc:
            raise ServiceError(429, str(exc), {"Retry-After": str(exc.retry_after)}) from None
        job = store.add_job(secrets.token_hex(12), owner, problem.id, name, hashlib.sha256(data).hexdigest(), data,
                            seed)
        runner.notify()
        return job

    def find_job(who: Identity, job_id: str, *, report: bool = True) -> dict:
        job = store.job(job_id, report=report) if len(job_id) <= 64 else None
        if not views.can_see(who, job):
            raise ServiceError(404, "no such submission")  # someone else's: as if there were none
        return job

    def status_of(who: Identity, job: dict, *, with_report: bool = True) -> dict:
        out = {k: job.get(k) for k in views.STATUS_FIELDS}
        out["problem"] = job["problem"]
        if job["status"] == "queued":
            out["position"] = store.queue_position(job["seq"])
        elif job["status"] == "running":
            out["progress"] = views.progress_for(who, job, runner.progress(job["id"]), config.rubric)
        else:
            report = views.report_for(who, job, config.rubric)
            out["verdict"] = report.get("verdict") if report else job.get("verdict")
            graded = views.graded_for(who, job, config.rubric)
            if graded is not None:
                out["score"], out["max_score"] = graded["score"], graded["max_score"]
            if with_report:
                out["report"] = report
                if who.staff:
                    out["graded"] = graded
        return out

    def file_of(body: SubmissionIn) -> bytes:
        if (body.source is None) == (body.text is None):
            raise ServiceError(400, "give the file as source (base64) or as text, one of them")
        if body.text is not None:
            return body.text.encode()
        try:
            return base64.b64decode(body.source, validate=True)
        except (binascii.Error, ValueError):
            raise ServiceError(400, "source is not valid base64") from None

    @app.post("/submissions", status_code=202, response_model=Accepted, responses=ERRORS, tags=["submissions"],
              summary="Submit a file; answers at once with the job's id")
    def post_submission(body: SubmissionIn, who: Identity = Depends(api_user)):
        job = submit(who, body.problem, body.filename, file_of(body), student=body.student, seed=body.seed)
        return JSONResponse(_accepted(job), status_code=202, headers={"Location": f"/submissions/{job['id']}"})

    @app.get("/submissions", tags=["submissions"], responses=ERRORS, summary="Your submissions (staff: all)")
    def list_submissions(student: str | None = None, problem: int | None = None, limit: int = 100,
                         who: Identity = Depends(api_user)):
        if student is not None and student != who.name and not who.staff:
            raise ServiceError(403, "only staff may list someone else's submissions")
        owner = student if who.staff else who.name
        jobs = store.jobs(owner, problem=problem, limit=max(1, min(limit, 1000)), reports=True)
        return {"submissions": [status_of(who, j, with_report=False) for j in jobs]}

    @app.get("/submissions/{job_id}", tags=["submissions"], responses=ERRORS,
             summary="A submission's status, and its report once it is done")
    def get_submission(job_id: str, who: Identity = Depends(api_user)):
        return status_of(who, find_job(who, job_id))

    @app.get("/submissions/{job_id}/events", tags=["submissions"], responses=ERRORS,
             summary="Server-sent events: the status as it changes (status), then done",
             response_class=StreamingResponse)
    async def submission_events(job_id: str, request: Request, who: Identity = Depends(api_user)):
        await run_in_threadpool(find_job, who, job_id, report=False)

        async def stream():
            yield "retry: 2000\n\n"
            last, quiet = None, 0
            while not await request.is_disconnected():
                job = await run_in_threadpool(store.job, job_id, report=False)
                done = job["status"] == "done"
                if done:
                    job = await run_in_threadpool(store.job, job_id)
                payload = await run_in_threadpool(status_of, who, job, with_report=False)
                if payload != last:
                    yield f"event: status\ndata: {json.dumps(payload)}\n\n"
                    last, quiet = payload, 0
                if done:
                    yield f"event: done\ndata: {json.dumps(payload)}\n\n"
                    return
                quiet += 1
                if quiet >= 30:
                    yield ": still here\n\n"
                    quiet = 0
                await asyncio.sleep(0.5)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/submissions/{job_id}/plot.png", tags=["submissions"], responses=ERRORS, response_class=FileResponse,
             summary="The speed plot (as --plot draws it), when the report has timed shapes")
    def submission_plot(job_id: str, who: Identity = Depends(api_user)):
        job = find_job(who, job_id)
        report = views.report_for(who, job, config.rubric)
        speed = (report or {}).get("speed") or {}
        if not speed.get("shapes"):
            raise ServiceError(404, "no speed plot: nothing was timed")
        path = service.state / "plots" / f"{job['id']}.png"
        if not path.exists():
            from judge.timing.render import plot

            path.parent.mkdir(parents=True, exist_ok=True)
            with plot_lock:  # matplotlib's pyplot is not thread-safe
                tmp = path.with_name(f".{path.name}.{threading.get_ident()}.png")
                note = plot(speed, tmp)
                if not tmp.exists():
                    raise ServiceError(404, note)
                tmp.replace(path)
        return FileResponse(path, media_type="image/png")

    @app.post("/grade", deprecated=True, tags=["submissions"], responses=ERRORS,
              summary="The old blocking call: waits for the report (use POST /submissions)")
    async def grade_blocking(body: SubmissionIn, who: Identity = Depends(api_user)):
        job = await run_in_threadpool(submit, who, body.problem, body.filename, file_of(body), student=body.student,
                                      seed=body.seed)
        while True:
            await asyncio.sleep(0.5)
            job = await run_in_threadpool(store.job, job["id"])
            if job["status"] == "done":
                return views.report_for(who, job, config.rubric)

    # -------------------------------------------------------------- problems, leaderboard, staff, health

    def problem_doc(p: Problem, statement: bool = False) -> dict:
        from judge.grading.rubric import visibility

        pr = config.rubric.for_problem(p)
        doc = {"id": p.id, "slug": p.slug, "title": p.title, "kind": p.kind, "suffix": p.suffix,
               "groups": [{"name": g.name, "about": g.about, "points": pr.points.get(g.name, g.points),
                           "visibility": visibility(pr, g.name)} for g in p.groups],
               "speed_points": p.speed_points if p.kind == "kernel" else 0}
        if statement:
            doc["statement"] = p.statement_path.read_text(encoding="utf-8")
        return doc

    @app.get("/problems", tags=["problems"], summary="The problems served")
    def list_problems():
        return {"problems": [problem_doc(p) for p in problems.values()]}

    @app.get("/problems/{key}", tags=["problems"], responses=ERRORS, summary="A problem, with its statement "
                                                                             "(markdown)")
    def get_problem(key: str):
        return problem_doc(problem_or_404(key), statement=True)

    @app.get("/problems/{key}/skeleton", tags=["problems"], responses=ERRORS, response_class=PlainTextResponse,
             summary="The file to start from")
    def get_skeleton(key: str):
        p = problem_or_404(key)
        return PlainTextResponse(p.skeleton_path.read_text(encoding="utf-8"),
                                 headers={"Content-Disposition": f'attachment; filename="{p.id}{p.suffix}"'})

    def board(p: Problem) -> list[dict]:
        return views.leaderboard(store.rows(), p, config.rubric, auth.staff_names())

    @app.get("/leaderboard/{key}", tags=["problems"], responses=ERRORS,
             summary="Each student's best accepted submission, fastest first")
    def get_leaderboard(key: str, who: Identity = Depends(api_user)):
        p = problem_or_404(key)
        return {"problem": p.id, "entries": board(p)}

    def staff_best():
        from judge.grading.batch import best_rows

        return best_rows(store, config.rubric)

    @app.get("/staff/results", tags=["staff"], responses=ERRORS, summary="The roster's best results")
    def staff_results(who: Identity = Depends(staff_user)):
        return views.staff_table(staff_best(), auth.students())

    @app.get("/staff/results.csv", tags=["staff"], responses=ERRORS, response_class=PlainTextResponse,
             summary="The same as judge grade --csv")
    def staff_csv(who: Identity = Depends(staff_user)):
        from judge.grading.batch import write_csv_to

        buf = io.StringIO()
        write_csv_to(staff_best(), buf)
        return Response(buf.getvalue(), media_type="text/csv",
                        headers={"Content-Disposition": 'attachment; filename="grades.csv"'})

    @app.get("/health", tags=["service"], summary="Whether it serves, and on what")
    def health():
        return {"ok": runner.alive(), "device": config.device, "slots": len(config.slots),
                "executor": config.executor, "sandbox": config.sandbox, "max_examples": config.max_examples,
                "pool": config.pool,
                "problems": list(problems), "jobs": store.job_counts()}

    # -------------------------------------------------------------- pages

    def page_user(who: Identity | None = Depends(who_is)) -> Identity:
        if who is None:
            raise ServiceError(401, "log in")
        return who

    def _ctx(request: Request, who: Identity | None, **extra) -> dict:
        return {"who": who, "open": auth.open, "device": config.device, "slots": len(config.slots),
                "problems": list(problems.values()), **extra}

    def same_origin(request: Request) -> None:
        """A form post must come from this site's pages (the cookie is SameSite=Lax; this closes the rest)."""
        origin = request.headers.get("origin")
        if origin and origin != "null" and origin.split("://", 1)[-1] != request.headers.get("host"):
            raise ServiceError(403, "a form of another site")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page_index(request: Request, who: Identity | None = Depends(who_is)):
        return templates.TemplateResponse(request, "index.html", _ctx(request, who, jobs=store.job_counts(),
                                                                      docs=[problem_doc(p) for p in
                                                                            problems.values()]))

    @app.get("/ui/login", response_class=HTMLResponse, include_in_schema=False)
    def page_login(request: Request, next: str = "/"):
        return templates.TemplateResponse(request, "login.html", _ctx(request, None, next=_local(next)))

    @app.post("/ui/login", include_in_schema=False)
    def do_login(request: Request, token: str = Form(...), next: str = Form("/")):
        same_origin(request)
        who = auth.identify(token.strip())
        if who is None or auth.open:
            return templates.TemplateResponse(request, "login.html",
                                              _ctx(request, None, next=_local(next), error="unknown token"),
                                              status_code=401)
        response = RedirectResponse(_local(next), status_code=303)
        response.set_cookie(COOKIE, token.strip(), httponly=True, samesite="lax", secure=config.secure_cookies,
                            max_age=30 * 86400)
        return response

    @app.post("/ui/logout", include_in_schema=False)
    def do_logout(request: Request):
        same_origin(request)
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    @app.get("/ui/problems/{key}", response_class=HTMLResponse, include_in_schema=False)
    def page_problem(request: Request, key: str, who: Identity = Depends(page_user)):
        p = problem_or_404(key)
        return templates.TemplateResponse(request, "problem.html", problem_context(request, who, p))

    def problem_context(request, who, p, **extra):
        if p.id not in statements:
            from markdown_it import MarkdownIt

            md = MarkdownIt("commonmark", {"html": False}).enable("table")
            statements[p.id] = md.render(p.statement_path.read_text(encoding="utf-8"))
        mine = store.jobs(who.name, problem=p.id, limit=10, reports=True)
        return _ctx(request, who, p=p, doc=problem_doc(p), statement=statements[p.id],
                    mine=[status_of(who, j, with_report=False) for j in mine], **extra)

    @app.post("/ui/submit", include_in_schema=False)
    async def do_submit(request: Request, problem: str = Form(...), text: str = Form(""), filename: str = Form(""),
                        file: UploadFile | None = File(None), who: Identity = Depends(page_user)):
        same_origin(request)
        data, name = b"", filename
        if file is not None and file.filename:
            data = await file.read(config.max_upload + 1)
            name = file.filename
        if not data:
            data = text.replace("\r\n", "\n").encode()
        try:
            if not data.strip():
                raise ServiceError(400, "choose a file, or paste it")  # the API judges an empty file (CE)
            job = await run_in_threadpool(submit, who, problem, name, data)
        except ServiceError as exc:
            p = find_problem(problem)
            if p is None or exc.code in (401, 403):
                raise
            ctx = await run_in_threadpool(problem_context, request, who, p, error=exc.message, text=text)
            return templates.TemplateResponse(request, "problem.html", ctx, status_code=exc.code,
                                              headers=exc.headers)
        return RedirectResponse(f"/ui/submissions/{job['id']}", status_code=303)

    @app.get("/ui/submissions", response_class=HTMLResponse, include_in_schema=False)
    def page_submissions(request: Request, who: Identity = Depends(page_user)):
        jobs = store.jobs(None if who.staff else who.name, limit=200, reports=True)
        return templates.TemplateResponse(request, "submissions.html",
                                          _ctx(request, who, jobs=[status_of(who, j, with_report=False)
                                                                   for j in jobs]))

    @app.get("/ui/submissions/{job_id}", response_class=HTMLResponse, include_in_schema=False)
    def page_submission(request: Request, job_id: str, who: Identity = Depends(page_user)):
        job = find_job(who, job_id)
        status = status_of(who, job)
        return templates.TemplateResponse(request, "submission.html",
                                          _ctx(request, who, job=status, p=find_problem(str(job["problem"])),
                                               r=status.get("report"), graded=status.get("graded")))

    @app.get("/ui/leaderboard/{key}", response_class=HTMLResponse, include_in_schema=False)
    def page_leaderboard(request: Request, key: str, who: Identity = Depends(page_user)):
        p = problem_or_404(key)
        return templates.TemplateResponse(request, "leaderboard.html", _ctx(request, who, p=p, entries=board(p)))

    @app.get("/ui/staff", response_class=HTMLResponse, include_in_schema=False)
    def page_staff(request: Request, who: Identity = Depends(page_user)):
        if not who.staff:
            raise ServiceError(403, "staff only")
        jobs = store.jobs(None, limit=100, reports=True)
        return templates.TemplateResponse(request, "staff.html",
                                          _ctx(request, who, table=views.staff_table(staff_best(), auth.students()),
                                               counts=store.job_counts(),
                                               jobs=[status_of(who, j, with_report=False) for j in jobs]))

    return app


def _accepted(job: dict) -> dict:
    return {"id": job["id"], "status": job["status"], "url": f"/submissions/{job['id']}",
            "events": f"/submissions/{job['id']}/events", "page": f"/ui/submissions/{job['id']}"}


def _local(path: str) -> str:
    """A redirect target on this site only."""
    return path if path.startswith("/") and not path.startswith("//") else "/"


def _when(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        t = dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _num(value) -> str:
    """A score for people: 20 rather than 20.0, 12.35 rather than 12.3456."""
    if not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    return f"{round(float(value), 2):g}"


def _speed_columns(speed: dict):
    from judge.timing.render import speed_columns

    return speed_columns(speed)


def _mount_docs(app: FastAPI) -> None:
    """Swagger UI at /docs from the files of the swagger-ui-bundle package (no CDN); FastAPI's own page (which
    loads them from a CDN) only where that package is missing."""
    from fastapi.openapi.docs import get_swagger_ui_html

    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        swagger_ui_path = None
    if swagger_ui_path is not None:
        app.mount("/static/swagger", StaticFiles(directory=swagger_ui_path), name="swagger")
        kwargs = {"swagger_js_url": "/static/swagger/swagger-ui-bundle.js",
                  "swagger_css_url": "/static/swagger/swagger-ui.css",
                  "swagger_favicon_url": "/static/swagger/favicon-32x32.png"}
    else:
        kwargs = {}

    @app.get("/docs", include_in_schema=False)
    def docs():
        return get_swagger_ui_html(openapi_url="/openapi.json", title="triton-judge API", **kwargs)
