"""The service's JSON API (OpenAPI at ``/openapi.json``, Swagger UI at ``/docs``):

* ``POST /submissions``: a submission in (JSON: ``problem``, ``filename``, ``source`` in base64 or ``text``;
  staff may add ``student`` and ``seed``), 202 with the job's id at once;
* ``GET /submissions/{id}``: its status (queued, with its place; running, with the group in progress;
  done) and, once done, the report its reader may see; ``GET /submissions``: one's own (staff: all);
* ``GET /submissions/{id}/events``: the same as server-sent events, until it is done;
* ``GET /submissions/{id}/plot.png``: the speed plot of ``--plot``, when the report has timed shapes;
* ``GET /problems``, ``GET /problems/{id}`` (with the statement), ``GET /problems/{id}/skeleton``;
* ``GET /leaderboard/{problem}``: each student's best accepted submission, fastest first;
* ``GET /me``, ``PUT /me``: who one is, one's deadline, and one's display name on the leaderboard;
* ``GET /health``; ``POST /grade``, the old blocking call, kept for bundles built before the job API.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import threading

from fastapi import Depends, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from judge.grading.course_record import RecordError
from judge.service import views
from judge.service.site import ServiceError, Site

DOCS_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>triton-judge API</title>
<link rel="stylesheet" href="/static/swagger/swagger-ui.css">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/static/swagger/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""


class SubmissionIn(BaseModel):
    problem: int | str = Field(description="The problem's id or slug, e.g. 93 or vector-add.")
    filename: str | None = Field(
        None, description="The file's name (default submission.py, or .toml for an answers problem)."
    )
    source: str | None = Field(None, description="The file's bytes in base64 (or give text).")
    text: str | None = Field(None, description="The file's text (instead of source).")
    student: str | None = Field(None, description="Staff only: submit on behalf of this student.")
    seed: int | None = Field(
        None,
        ge=0,
        description="Staff only: the judge seed (the --forward clients send "
        "the one their rubric derives); default: the service's.",
    )


class Accepted(BaseModel):
    id: str
    status: str
    url: str
    events: str
    page: str


class MeIn(BaseModel):
    display_name: str | None = Field(None, description="What the leaderboard calls you (1-40 characters).")
    on_leaderboard: bool = Field(False, description="Show the display name on the leaderboard (default: anonymous).")


class Error(BaseModel):
    error: str


ERRORS = {code: {"model": Error} for code in (400, 401, 403, 404, 413, 429)}


def accepted(job: dict) -> dict:
    return {
        "id": job["id"],
        "status": job["status"],
        "url": f"/submissions/{job['id']}",
        "events": f"/submissions/{job['id']}/events",
        "page": f"/ui/submissions/{job['id']}",
    }


def file_of(body: SubmissionIn) -> bytes:
    if (body.source is None) == (body.text is None):
        raise ServiceError(400, "give the file as source (base64) or as text, one of them")
    if body.text is not None:
        return body.text.encode()
    try:
        return base64.b64decode(body.source, validate=True)
    except (binascii.Error, ValueError):
        raise ServiceError(400, "source is not valid base64") from None


def register(app: FastAPI, site: Site) -> None:
    config, store, api_user = site.config, site.store, site.api_user

    @app.get("/docs", include_in_schema=False, response_class=HTMLResponse)
    def docs():
        return HTMLResponse(DOCS_PAGE)

    # -------------------------------------------------------------- submissions

    @app.post(
        "/submissions",
        status_code=202,
        response_model=Accepted,
        responses=ERRORS,
        tags=["submissions"],
        summary="Submit a file; answers at once with the job's id",
    )
    def post_submission(body: SubmissionIn, who=Depends(api_user)):
        job = site.submit(who, body.problem, body.filename, file_of(body), student=body.student, seed=body.seed)
        return JSONResponse(accepted(job), status_code=202, headers={"Location": f"/submissions/{job['id']}"})

    @app.get("/submissions", tags=["submissions"], responses=ERRORS, summary="Your submissions (staff: all)")
    def list_submissions(
        student: str | None = None, problem: int | None = None, limit: int = 100, who=Depends(api_user)
    ):
        if student is not None and student != who.name and not who.staff:
            raise ServiceError(403, "only staff may list someone else's submissions")
        owner = student if who.staff else who.name
        jobs = store.jobs(owner, problem=problem, limit=max(1, min(limit, 1000)), reports=True)
        deadline = site.deadline_of(who)
        return {"submissions": [site.status_of(who, j, with_report=False, deadline=deadline) for j in jobs]}

    @app.get(
        "/submissions/{job_id}",
        tags=["submissions"],
        responses=ERRORS,
        summary="A submission's status, and its report once it is done",
    )
    def get_submission(job_id: str, who=Depends(api_user)):
        return site.status_of(who, site.find_job(who, job_id))

    @app.get(
        "/submissions/{job_id}/events",
        tags=["submissions"],
        responses=ERRORS,
        summary="Server-sent events: the status as it changes (status), then done",
        response_class=StreamingResponse,
    )
    async def submission_events(job_id: str, request: Request, who=Depends(api_user)):
        await run_in_threadpool(site.find_job, who, job_id, report=False)

        async def stream():
            yield "retry: 2000\n\n"
            last, quiet = None, 0
            while not await request.is_disconnected():
                job = await run_in_threadpool(store.job, job_id, report=False)
                done = job["status"] == "done"
                if done:
                    job = await run_in_threadpool(store.job, job_id)
                payload = await run_in_threadpool(site.status_of, who, job, with_report=False)
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

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        )

    @app.get(
        "/submissions/{job_id}/plot.png",
        tags=["submissions"],
        responses=ERRORS,
        response_class=FileResponse,
        summary="The speed plot (as --plot draws it), when the report has timed shapes",
    )
    def submission_plot(job_id: str, who=Depends(api_user)):
        job = site.find_job(who, job_id)
        report = views.report_for(who, job, config.rubric, deadline=site.deadline_of(who))
        speed = (report or {}).get("speed") or {}
        if not speed.get("shapes"):
            raise ServiceError(404, "no speed plot: nothing was timed")
        path = config.state / "plots" / f"{job['id']}.png"
        if not path.exists():
            from judge.timing.render import plot

            path.parent.mkdir(parents=True, exist_ok=True)
            with site.plot_lock:  # matplotlib's pyplot is not thread-safe
                tmp = path.with_name(f".{path.name}.{threading.get_ident()}.png")
                note = plot(speed, tmp)
                if not tmp.exists():
                    raise ServiceError(404, note)
                tmp.replace(path)
        return FileResponse(path, media_type="image/png")

    @app.post(
        "/grade",
        deprecated=True,
        tags=["submissions"],
        responses=ERRORS,
        summary="The old blocking call: waits for the report (use POST /submissions)",
    )
    async def grade_blocking(body: SubmissionIn, who=Depends(api_user)):
        job = await run_in_threadpool(
            site.submit, who, body.problem, body.filename, file_of(body), student=body.student, seed=body.seed
        )
        while True:
            await asyncio.sleep(0.5)
            job = await run_in_threadpool(store.job, job["id"])
            if job["status"] == "done":
                return views.report_for(who, job, config.rubric, deadline=site.deadline_of(who))

    # -------------------------------------------------------------- problems, leaderboard, me, health

    @app.get("/problems", tags=["problems"], summary="The problems served")
    def list_problems():
        return {"problems": [site.problem_doc(p) for p in site.problems.values()]}

    @app.get("/problems/{key}", tags=["problems"], responses=ERRORS, summary="A problem, with its statement (markdown)")
    def get_problem(key: str):
        return site.problem_doc(site.problem_or_404(key), statement=True)

    @app.get(
        "/problems/{key}/skeleton",
        tags=["problems"],
        responses=ERRORS,
        response_class=PlainTextResponse,
        summary="The file to start from",
    )
    def get_skeleton(key: str):
        p = site.problem_or_404(key)
        return PlainTextResponse(
            p.skeleton_path.read_text(encoding="utf-8"),
            headers={"Content-Disposition": f'attachment; filename="{p.id}{p.suffix}"'},
        )

    @app.get(
        "/leaderboard/{key}",
        tags=["problems"],
        responses=ERRORS,
        summary="Each student's best accepted submission, fastest first (by what you are shown)",
    )
    def get_leaderboard(key: str, who=Depends(api_user)):
        p = site.problem_or_404(key)
        return {"problem": p.id, "entries": site.board(p, who)}

    @app.get("/me", tags=["me"], responses=ERRORS, summary="Who you are, your deadline, your display name")
    def get_me(who=Depends(api_user)):
        return me_doc(site, who)

    @app.put("/me", tags=["me"], responses=ERRORS, summary="Choose your display name on the leaderboard")
    def put_me(body: MeIn, who=Depends(api_user)):
        try:
            site.record.set_display(who.name, body.display_name, body.on_leaderboard)
        except RecordError as exc:
            raise ServiceError(400, str(exc)) from None
        return me_doc(site, who)

    @app.get("/health", tags=["service"], summary="Whether it serves, and on what")
    def health():
        return {
            "ok": site.runner.alive(),
            "device": config.device,
            "slots": len(config.slots),
            "executor": config.executor,
            "sandbox": config.sandbox,
            "max_examples": config.max_examples,
            "pool": config.pool,
            "problems": list(site.problems),
            "jobs": store.job_counts(),
        }


def me_doc(site: Site, who) -> dict:
    person = site.record.people().get(who.name) or {}
    deadline = site.record.deadline_of(who.name, site.config.rubric.deadline)
    return {
        "name": who.name,
        "role": who.role,
        "display_name": person.get("display_name"),
        "on_leaderboard": bool(person.get("on_leaderboard")),
        "deadline": deadline.isoformat() if deadline else None,
        "extended": deadline is not None and deadline != site.config.rubric.deadline,
    }
