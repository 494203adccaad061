"""The service's pages under ``/ui`` (and ``/``): problems, the submit form, a submission's live status and
report, one's submissions, the leaderboard, the login and one's display name.

A page's form must come from this site (``same_origin``); the session cookie is SameSite=Lax, so a link from
the course's site lands logged in while another site's form post is refused here.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from judge.grading.course_record import RecordError
from judge.problems import find_problem
from judge.service.sessions import COOKIE
from judge.service.site import ServiceError, Site


def local(path: str) -> str:
    """A redirect target on this site only."""
    return path if path.startswith("/") and not path.startswith("//") else "/"


def same_origin(request: Request) -> None:
    """A form post must come from this site's pages."""
    origin = request.headers.get("origin")
    if origin and origin != "null" and origin.split("://", 1)[-1] != request.headers.get("host"):
        raise ServiceError(403, "a form of another site")


def register(app: FastAPI, site: Site) -> None:
    config, store, auth, sessions = site.config, site.store, site.auth, site.sessions
    page_user = site.page_user

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page_index(request: Request, who=Depends(site.who_is)):
        return site.render(
            request,
            "index.html",
            who,
            jobs=store.job_counts(),
            docs=[site.problem_doc(p) for p in site.problems.values()],
        )

    @app.get("/ui/login", response_class=HTMLResponse, include_in_schema=False)
    def page_login(request: Request, next: str = "/"):
        return site.render(request, "login.html", None, next=local(next))

    @app.post("/ui/login", include_in_schema=False)
    def do_login(request: Request, token: str = Form(...), next: str = Form("/")):
        same_origin(request)
        who = auth.identify(token.strip())
        if who is None or auth.open:
            return site.render(request, "login.html", None, status_code=401, next=local(next), error="unknown token")
        response = RedirectResponse(local(next), status_code=303)
        response.set_cookie(
            COOKIE,
            sessions.open(who),
            httponly=True,
            samesite="lax",
            secure=config.secure_cookies,
            max_age=int(sessions.lifetime),
        )
        return response

    @app.post("/ui/logout", include_in_schema=False)
    def do_logout(request: Request):
        same_origin(request)
        sessions.close(request.cookies.get(COOKIE))
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    @app.get("/ui/me", response_class=HTMLResponse, include_in_schema=False)
    def page_me(request: Request, who=Depends(page_user), saved: int = 0):
        from judge.service.api import me_doc

        return site.render(request, "me.html", who, me=me_doc(site, who), saved=bool(saved))

    @app.post("/ui/me", include_in_schema=False)
    def do_me(request: Request, display_name: str = Form(""), on_leaderboard: str = Form(""), who=Depends(page_user)):
        from judge.service.api import me_doc

        same_origin(request)
        try:
            site.record.set_display(who.name, display_name.strip() or None, bool(on_leaderboard))
        except RecordError as exc:
            return site.render(request, "me.html", who, status_code=400, me=me_doc(site, who), error=str(exc))
        return RedirectResponse("/ui/me?saved=1", status_code=303)

    @app.get("/ui/problems/{key}", response_class=HTMLResponse, include_in_schema=False)
    def page_problem(request: Request, key: str, who=Depends(page_user)):
        p = site.problem_or_404(key)
        return site.render(request, "problem.html", who, **problem_context(who, p))

    def problem_context(who, p, **extra):
        if p.id not in site.statements:
            from markdown_it import MarkdownIt

            md = MarkdownIt("commonmark", {"html": False}).enable("table")
            site.statements[p.id] = md.render(p.statement_path.read_text(encoding="utf-8"))
        mine = store.jobs(who.name, problem=p.id, limit=10, reports=True)
        deadline = site.deadline_of(who)
        return dict(
            p=p,
            doc=site.problem_doc(p),
            statement=site.statements[p.id],
            mine=[site.status_of(who, j, with_report=False, deadline=deadline) for j in mine],
            **extra,
        )

    @app.post("/ui/submit", include_in_schema=False)
    async def do_submit(
        request: Request,
        problem: str = Form(...),
        text: str = Form(""),
        filename: str = Form(""),
        file: UploadFile | None = File(None),
        who=Depends(page_user),
    ):
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
            job = await run_in_threadpool(site.submit, who, problem, name, data)
        except ServiceError as exc:
            p = find_problem(problem)
            if p is None or exc.code in (401, 403):
                raise
            extra = await run_in_threadpool(problem_context, who, p, error=exc.message, text=text)
            return site.render(request, "problem.html", who, status_code=exc.code, headers=exc.headers, **extra)
        return RedirectResponse(f"/ui/submissions/{job['id']}", status_code=303)

    @app.get("/ui/submissions", response_class=HTMLResponse, include_in_schema=False)
    def page_submissions(request: Request, who=Depends(page_user)):
        jobs = store.jobs(None if who.staff else who.name, limit=200, reports=True)
        deadline = site.deadline_of(who)
        return site.render(
            request,
            "submissions.html",
            who,
            jobs=[site.status_of(who, j, with_report=False, deadline=deadline) for j in jobs],
        )

    @app.get("/ui/submissions/{job_id}", response_class=HTMLResponse, include_in_schema=False)
    def page_submission(request: Request, job_id: str, who=Depends(page_user)):
        job = site.find_job(who, job_id)
        status = site.status_of(who, job)
        return site.render(
            request,
            "submission.html",
            who,
            job=status,
            p=find_problem(str(job["problem"])),
            r=status.get("report"),
            graded=status.get("graded"),
        )

    @app.get("/ui/leaderboard/{key}", response_class=HTMLResponse, include_in_schema=False)
    def page_leaderboard(request: Request, key: str, who=Depends(page_user)):
        p = site.problem_or_404(key)
        return site.render(request, "leaderboard.html", who, p=p, entries=site.board(p, who))
