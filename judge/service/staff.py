"""The staff's part of the service: the roster's standings, their CSV, and the tools that change a grade.

* ``GET /staff/results``, ``GET /staff/results.csv``: the result that counts per student and problem, for
  every student of the roster and problem of the course (judge.grading.standings);
* ``POST /staff/extensions`` (``student``, ``deadline`` or null to withdraw, ``reason``): a student's own
  deadline: their hidden groups stay hidden, and their leaderboard stays the one before the deadline, until
  it; the CSV marks what they submitted after it late; ``GET /staff/extensions``: those in force;
* ``POST /staff/overrides`` (``student``, ``problem``, ``score`` or null to withdraw, ``reason``): a score
  instead of the judged one; ``GET /staff/overrides``: their history (every change, who, when, why);
* ``POST /staff/regrade`` (``problem``): every job of the problem judged again by the judge as it is now;
  ``GET /staff/regrades``: the rounds so far;
* ``PUT /staff/counting/{problem}`` (``counts``: best or last): which submission counts;
  ``GET /staff/counting``.

Every decision is kept in the grading store (judge.grading.course_record) and shows in the CSV. The staff
page (``/ui/staff``) has a form for each.
"""

from __future__ import annotations

import io

from fastapi import Depends, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, Field

from judge.grading.course_record import RecordError, parse_when
from judge.grading.roster import STUDENT_NAME
from judge.service.site import ServiceError, Site

DONE = {
    "extension": "The extension is recorded.",
    "override": "The override is recorded.",
    "regrade": "The problem's jobs are queued to be judged again.",
    "counting": "Saved.",
}


class ExtensionIn(BaseModel):
    student: str
    deadline: str | None = Field(None, description="An ISO date-time with a zone; null withdraws the extension.")
    reason: str


class OverrideIn(BaseModel):
    student: str
    problem: int | str
    score: float | None = Field(None, description="The score that counts; null withdraws the override.")
    reason: str


class RegradeIn(BaseModel):
    problem: int | str


class CountingIn(BaseModel):
    counts: str = Field(description="best or last")


def register(app: FastAPI, site: Site) -> None:
    record, store, staff_user = site.record, site.store, site.staff_user

    def student_or_400(name: str) -> str:
        if not STUDENT_NAME.match(name or ""):
            raise ServiceError(400, "student must be 1-128 letters, digits or ._@+-")
        return name

    def extend(who, student: str, deadline: str | None, reason: str) -> dict:
        try:
            return record.extend(student_or_400(student), parse_when(deadline) if deadline else None, reason, who.name)
        except RecordError as exc:
            raise ServiceError(400, str(exc)) from None

    def override(who, student: str, problem, score: float | None, reason: str) -> dict:
        p = site.problem_or_404(problem)
        try:
            return record.override(student_or_400(student), p.id, score, reason, who.name)
        except RecordError as exc:
            raise ServiceError(400, str(exc)) from None

    def regrade(who, problem) -> dict:
        out = store.regrade(site.problem_or_404(problem).id, who.name)
        site.runner.notify()
        return out

    def counting(who, problem, counts: str) -> dict:
        try:
            return record.set_counting(site.problem_or_404(problem).id, counts, who.name)
        except RecordError as exc:
            raise ServiceError(400, str(exc)) from None

    def table() -> dict:
        from judge.grading.standings import staff_table

        best, problems = site.standings()
        return staff_table(best, site.auth.students(), problems)

    # -------------------------------------------------------------- the API

    @app.get("/staff/results", tags=["staff"], summary="The roster's results: what counts per student and problem")
    def staff_results(who=Depends(staff_user)):
        return table()

    @app.get(
        "/staff/results.csv",
        tags=["staff"],
        response_class=PlainTextResponse,
        summary="The same as judge grade --csv, with the staff's decisions",
    )
    def staff_csv(who=Depends(staff_user)):
        from judge.grading.standings import write_csv_to

        buf = io.StringIO()
        write_csv_to(site.standings()[0], buf)
        return Response(
            buf.getvalue(), media_type="text/csv", headers={"Content-Disposition": 'attachment; filename="grades.csv"'}
        )

    @app.post("/staff/extensions", tags=["staff"], summary="Give a student their own deadline (null: withdraw)")
    def post_extension(body: ExtensionIn, who=Depends(staff_user)):
        return extend(who, body.student, body.deadline, body.reason)

    @app.get("/staff/extensions", tags=["staff"], summary="The extensions in force")
    def get_extensions(who=Depends(staff_user)):
        return {"extensions": list(record.extensions().values())}

    @app.post("/staff/overrides", tags=["staff"], summary="Override a student's score on a problem (null: withdraw)")
    def post_override(body: OverrideIn, who=Depends(staff_user)):
        return override(who, body.student, body.problem, body.score, body.reason)

    @app.get("/staff/overrides", tags=["staff"], summary="Every override made, oldest first")
    def get_overrides(student: str | None = None, problem: int | None = None, who=Depends(staff_user)):
        return {"overrides": record.override_history(student, problem)}

    @app.post(
        "/staff/regrade",
        tags=["staff"],
        status_code=202,
        summary="Judge every job of a problem again, with the judge as it is now",
    )
    def post_regrade(body: RegradeIn, who=Depends(staff_user)):
        return regrade(who, body.problem)

    @app.get("/staff/regrades", tags=["staff"], summary="The regrade rounds so far")
    def get_regrades(who=Depends(staff_user)):
        return {"regrades": store.regrades()}

    @app.put("/staff/counting/{key}", tags=["staff"], summary="Which submission counts: best or last")
    def put_counting(key: str, body: CountingIn, who=Depends(staff_user)):
        return counting(who, key, body.counts)

    @app.get("/staff/counting", tags=["staff"], summary="Which submission counts, per problem (default best)")
    def get_counting(who=Depends(staff_user)):
        return {"counting": {str(k): v for k, v in record.counting().items()}}

    # -------------------------------------------------------------- the page and its forms

    @app.get("/ui/staff", response_class=HTMLResponse, include_in_schema=False)
    def page_staff(request: Request, who=Depends(site.page_user), done: str = ""):
        if not who.staff:
            raise ServiceError(403, "staff only")
        jobs = store.jobs(None, limit=100, reports=True)
        return site.render(
            request,
            "staff.html",
            who,
            table=table(),
            counts=store.job_counts(),
            jobs=[site.status_of(who, j, with_report=False, deadline=None) for j in jobs],
            extensions=list(record.extensions().values()),
            overrides=record.override_history()[-20:],
            counting=record.counting(),
            regrades=store.regrades()[-10:],
            done=DONE.get(done, ""),
        )

    def form_user(request: Request, who=Depends(site.page_user)):
        from judge.service.pages import same_origin

        same_origin(request)
        if not who.staff:
            raise ServiceError(403, "staff only")
        return who

    def back(what: str):
        return RedirectResponse(f"/ui/staff?done={what}#tools", status_code=303)

    @app.post("/ui/staff/extension", include_in_schema=False)
    def form_extension(
        student: str = Form(...), deadline: str = Form(""), reason: str = Form(""), who=Depends(form_user)
    ):
        extend(who, student.strip(), deadline.strip() or None, reason)
        return back("extension")

    @app.post("/ui/staff/override", include_in_schema=False)
    def form_override(
        student: str = Form(...),
        problem: str = Form(...),
        score: str = Form(""),
        reason: str = Form(""),
        who=Depends(form_user),
    ):
        try:
            value = float(score) if score.strip() else None
        except ValueError:
            raise ServiceError(400, "the score must be a number (or empty, to withdraw the override)") from None
        override(who, student.strip(), problem, value, reason)
        return back("override")

    @app.post("/ui/staff/regrade", include_in_schema=False)
    def form_regrade(problem: str = Form(...), who=Depends(form_user)):
        regrade(who, problem)
        return back("regrade")

    @app.post("/ui/staff/counting", include_in_schema=False)
    def form_counting(problem: str = Form(...), counts: str = Form(...), who=Depends(form_user)):
        counting(who, problem, counts)
        return back("counting")
