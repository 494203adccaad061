"""What the API, the pages and the staff's tools share: who is asking, submitting a file, a job's status as
its reader may see it, a problem's document, the leaderboard and the standings.

``Site`` holds the service's parts (judge.service.server.Service) and the request dependencies FastAPI
resolves: ``who_is`` (a bearer token, else the pages' session cookie), ``api_user`` (401 without one),
``staff_user`` (403 for a student) and ``page_user`` (the pages: a redirect to the login page).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from pathlib import PurePath

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from judge.grading.course_record import CourseRecord
from judge.grading.roster import STUDENT_NAME
from judge.problems import Problem, all_problems, find_problem
from judge.service import views
from judge.service.auth import Identity, RateLimited, check_rate
from judge.service.sessions import COOKIE


class ServiceError(Exception):
    """An answer other than success: ``{"error": message}`` with CODE (the pages: an error page)."""

    def __init__(self, code: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.code, self.message, self.headers = code, message, headers or {}


class Site:
    def __init__(self, service, templates):
        self.service = service
        self.config, self.store, self.auth, self.runner = service.config, service.store, service.auth, service.runner
        self.sessions = service.sessions
        self.record = CourseRecord(self.store)
        self.templates = templates
        self.problems = {p.id: p for p in all_problems()}
        self.statements: dict[int, str] = {}
        self.plot_lock = threading.Lock()
        bearer = HTTPBearer(auto_error=False, description="A staff or student token")

        def who_is(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Identity | None:
            if creds is not None:
                return self.auth.identify(creds.credentials)
            return self.page_identity(request)

        def api_user(who: Identity | None = Depends(who_is)) -> Identity:
            if who is None:
                raise ServiceError(401, "missing or wrong token", {"WWW-Authenticate": "Bearer"})
            return who

        def staff_user(who: Identity = Depends(api_user)) -> Identity:
            if not who.staff:
                raise ServiceError(403, "staff only")
            return who

        def page_user(who: Identity | None = Depends(who_is)) -> Identity:
            if who is None:
                raise ServiceError(401, "log in")
            return who

        self.who_is, self.api_user, self.staff_user, self.page_user = who_is, api_user, staff_user, page_user

    def page_identity(self, request: Request) -> Identity | None:
        """Who the pages' session cookie names (open mode: everyone is ``local``)."""
        if self.auth.open:
            return self.auth.identify(None)
        return self.sessions.identify(request.cookies.get(COOKIE), self.auth)

    def deadline_of(self, who: Identity):
        """WHO's deadline: an extension's, else the rubric's (None for staff, who see everything)."""
        if who.staff:
            return None
        return self.record.deadline_of(who.name, self.config.rubric.deadline)

    # ------------------------------------------------------------------ jobs

    def problem_or_404(self, key) -> Problem:
        problem = find_problem(str(key))
        if problem is None or problem.id not in self.problems:
            raise ServiceError(404, f"unknown problem '{key}'; valid: {', '.join(map(str, self.problems))}")
        return problem

    def submit(
        self,
        who: Identity,
        problem_key,
        filename: str | None,
        data: bytes,
        *,
        student: str | None = None,
        seed: int | None = None,
    ) -> dict:
        config = self.config
        problem = find_problem(str(problem_key))
        if problem is None or problem.id not in self.problems:
            raise ServiceError(400, f"unknown problem '{problem_key}'; valid: {', '.join(map(str, self.problems))}")
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
            if seed == self.service.seeds.get(problem.id):
                seed = None  # the service's own: the course's record
        try:
            check_rate(self.store, who, config.rate, config.max_pending)
        except RateLimited as exc:
            raise ServiceError(429, str(exc), {"Retry-After": str(exc.retry_after)}) from None
        job = self.store.add_job(
            secrets.token_hex(12), owner, problem.id, name, hashlib.sha256(data).hexdigest(), data, seed
        )
        self.runner.notify()
        return job

    def find_job(self, who: Identity, job_id: str, *, report: bool = True) -> dict:
        job = self.store.job(job_id, report=report) if len(job_id) <= 64 else None
        if not views.can_see(who, job):
            raise ServiceError(404, "no such submission")  # someone else's: as if there were none
        return job

    def status_of(self, who: Identity, job: dict, *, with_report: bool = True, deadline=False) -> dict:
        rubric = self.config.rubric
        deadline = self.deadline_of(who) if deadline is False else deadline
        out = {k: job.get(k) for k in views.STATUS_FIELDS}
        out["problem"] = job["problem"]
        if job["status"] == "queued":
            out["position"] = self.store.queue_position(job["seq"])
        elif job["status"] == "running":
            out["progress"] = views.progress_for(who, job, self.runner.progress(job["id"]), rubric, deadline=deadline)
        if job["status"] != "done":
            out["verdict"] = None  # a regraded job's earlier verdict is not its result any more
        else:
            report, graded = views.done_views(who, job, rubric, deadline=deadline)
            out["verdict"] = report.get("verdict") if report else job.get("verdict")
            if graded is not None:
                out["score"], out["max_score"] = graded["score"], graded["max_score"]
            if with_report:
                out["report"] = report
                if who.staff:
                    out["graded"] = graded
        return out

    # ------------------------------------------------------------------ problems, leaderboard, standings

    def problem_doc(self, p: Problem, statement: bool = False) -> dict:
        from judge.grading.rubric import visibility

        pr = self.config.rubric.for_problem(p)
        doc = {
            "id": p.id,
            "slug": p.slug,
            "title": p.title,
            "kind": p.kind,
            "suffix": p.suffix,
            "groups": [
                {
                    "name": g.name,
                    "about": g.about,
                    "points": pr.points.get(g.name, g.points),
                    "visibility": visibility(pr, g.name),
                }
                for g in p.groups
            ],
            "speed_points": p.speed_points if p.kind == "kernel" else 0,
        }
        if statement:
            doc["statement"] = p.statement_path.read_text(encoding="utf-8")
        return doc

    def board(self, p: Problem, who: Identity) -> list[dict]:
        return views.leaderboard(
            self.store.rows(),
            p,
            self.config.rubric,
            self.auth.staff_names(),
            self.record.people(),
            viewer=who,
            deadline=self.deadline_of(who),
        )

    def standings(self) -> tuple[dict, list[int]]:
        """The counted result per (student, problem), a row for every roster student and course problem."""
        from judge.grading.standings import best_rows, course_problems, fill_missing

        best = best_rows(self.store, self.config.rubric)
        problems = course_problems(self.config.rubric, best)
        return fill_missing(
            best, self.auth.students(), problems, self.config.rubric, interpret=self.config.device == "cpu"
        ), problems

    def ctx(self, request: Request, who: Identity | None, **extra) -> dict:
        return {
            "who": who,
            "open": self.auth.open,
            "device": self.config.device,
            "slots": len(self.config.slots),
            "problems": list(self.problems.values()),
            **extra,
        }

    def render(
        self,
        request: Request,
        template: str,
        who: Identity | None,
        status_code: int = 200,
        headers: dict | None = None,
        **extra,
    ):
        return self.templates.TemplateResponse(
            request, template, self.ctx(request, who, **extra), status_code=status_code, headers=headers
        )
