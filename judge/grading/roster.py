"""Who submitted what: a roster directory or CSV, resolved to (student, problem, file) entries.

Directory roster: one entry per student, named by the entry's name:

* a file ``alice.py`` directly in the roster is alice's submission; allowed
  only when a single problem is graded (nothing says which problem it is for);
  ``alice.toml`` for an answers problem;
* a folder ``alice/`` holds alice's files; for each problem the file is picked
  by :func:`pick_file` (the rule is documented there and in docs/staff/grade.md).

CSV roster: a header ``student,problem,path`` (extra columns are ignored),
``problem`` an id or slug, ``path`` relative to the CSV's folder. A student may
appear several times for one problem (several submissions): each is judged.

A student with no file for a problem still gets an entry, with ``path`` None:
it is recorded as a compile error ("no submission"), so the roster's export
lists every student for every problem.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from judge.problems import Problem, find_problem

STUDENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


class RosterError(Exception):
    """The roster cannot be read: a usage error (exit 2), one line."""


@dataclass(frozen=True)
class Entry:
    student: str
    problem: Problem
    path: Path | None  # None: the student has no file for this problem
    sha256: str  # of the file's bytes; "missing" when there is no file

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.student, self.problem.id, self.sha256)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def candidate_names(problem: Problem) -> list[str]:
    """File names that mean "my submission for this problem", in order of preference."""
    slug, ext = problem.slug, problem.suffix  # .py for a kernel, .toml for an answers problem
    names = [
        f"{problem.id}{ext}",
        f"{problem.id:03d}{ext}",
        f"{problem.directory.name}{ext}",
        f"{slug}{ext}",
        f"{slug.replace('-', '_')}{ext}",
    ]
    return list(dict.fromkeys(names))


def pick_file(folder: Path, problem: Problem, single_problem: bool) -> Path | None:
    """The file in FOLDER that is the submission for PROBLEM.

    The rule: the first that exists of ``<id>.py`` (``94.py``), ``<NNN>.py``
    (``094.py``), ``<NNN-slug>.py`` (``094-softmax.py``), ``<slug>.py`` with a
    hyphen or an underscore (``vector-add.py``, ``vector_add.py``); when only
    one problem is graded and the folder holds exactly one ``.py`` file, that
    file. Only the folder's top level is looked at. For an answers problem
    the same names end in ``.toml`` (``101.toml``, ``grid-and-masks.toml``).
    """
    for name in candidate_names(problem):
        path = folder / name
        if path.is_file():
            return path
    if single_problem:
        files = sorted(p for p in folder.glob(f"*{problem.suffix}") if p.is_file())
        if len(files) == 1:
            return files[0]
    return None


def _entry(student: str, problem: Problem, path: Path | None) -> Entry:
    if path is None:
        return Entry(student, problem, None, "missing")
    return Entry(student, problem, path, sha256_of(path))


def _check_student(name: str, where: str) -> str:
    if not STUDENT_NAME.match(name):
        raise RosterError(
            f"{where}: student name '{name}' must be 1-128 letters, digits or ._@+- "
            "(it names the student's report file)"
        )
    return name


def load_roster(roster: Path, problems: list[Problem]) -> list[Entry]:
    """Every (student, problem) entry of ROSTER for the given problems (CSV: all its problems if none given)."""
    if not roster.exists():
        raise RosterError(f"no such roster: {roster}")
    if roster.is_dir():
        return _from_directory(roster, problems)
    if roster.suffix.lower() == ".csv":
        return _from_csv(roster, problems)
    raise RosterError(f"{roster}: a roster is a directory (one folder or file per student) or a .csv file")


def _from_directory(root: Path, problems: list[Problem]) -> list[Entry]:
    if not problems:
        raise RosterError("a directory roster needs --problem (which problems to grade)")
    entries = []
    children = sorted(p for p in root.iterdir() if not p.name.startswith("."))
    for child in children:
        if child.is_dir():
            student = _check_student(child.name, str(child))
            for problem in problems:
                entries.append(_entry(student, problem, pick_file(child, problem, len(problems) == 1)))
        elif child.is_file() and child.suffix in {p.suffix for p in problems}:
            if len(problems) != 1:
                raise RosterError(
                    f"{child}: a file directly in the roster is only allowed when grading one "
                    "problem; with several, give each student a folder"
                )
            entries.append(_entry(_check_student(child.stem, str(child)), problems[0], child))
    if not entries:
        raise RosterError(f"{root}: no student folders or {'/'.join(sorted({p.suffix for p in problems}))} files in it")
    return entries


def _from_csv(path: Path, problems: list[Problem]) -> list[Entry]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot read it: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    header = [h.strip().lower() for h in (reader.fieldnames or [])]
    if not {"student", "problem", "path"} <= set(header):
        raise RosterError(f"{path}: the first line must be a header with student,problem,path")
    reader.fieldnames = header
    wanted = {p.id for p in problems}
    cache: dict[str, Problem] = {}
    entries, seen = [], set()
    for lineno, row in enumerate(reader, start=2):
        where = f"{path}:{lineno}"
        student = _check_student((row.get("student") or "").strip(), where)
        key = (row.get("problem") or "").strip()
        if key not in cache:
            found = find_problem(key) if key else None
            if found is None:
                raise RosterError(f"{where}: unknown problem '{key}'")
            cache[key] = found
        problem = cache[key]
        if wanted and problem.id not in wanted:
            continue
        raw = (row.get("path") or "").strip()
        file = (path.parent / raw) if raw else None
        if file is not None and not file.is_file():
            file = None  # recorded as "no submission", not an error: the roster is still graded
        entry = _entry(student, problem, file)
        if entry.key not in seen:  # the same file listed twice is judged once
            seen.add(entry.key)
            entries.append(entry)
    if not entries:
        raise RosterError(f"{path}: no rows for the problems asked for")
    return entries
