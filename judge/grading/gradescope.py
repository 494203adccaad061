"""Gradescope: the autograder bundle, and ``results.json`` to the published spec.

Spec: https://gradescope-autograders.readthedocs.io/en/latest/specs/ (see
shared research notes). One test per group (points from the rubric, the
rubric's visibility: ``visible``, ``after_due_date`` or ``hidden``), a speed
test when speed has points, a ``speedup`` leaderboard column when the report
has one. Student output never carries the seed.

The bundle (``judge gradescope bundle``) holds:

* ``setup.sh``: run once as root when Gradescope builds the image (Ubuntu
  22.04): Python 3.11, bubblewrap (so ``--sandbox auto`` can contain the
  submission), the judge with the CPU build of torch; in forward mode only the
  judge's light dependencies (no submission code runs in the container);
* ``run_autograder``: run per submission; calls ``judge gradescope run``;
* ``triton-judge/``: the judge's source and problems (no corpora, no reference
  solutions), and the rubric if one was given.
"""

from __future__ import annotations

import io
import json
import stat
import time
import zipfile
from pathlib import Path

from judge.grading.feedback import group_output
from judge.grading.job import REPO_ROOT, platform_report
from judge.grading.roster import candidate_names
from judge.grading.rubric import Rubric, file_level, grade, student_view
from judge.problems import Problem
from judge.verdicts import Verdict

# The CPU build of torch, named explicitly: on the public index a bare torch==2.13.0 is the multi-GB CUDA
# build (the README's install note). Triton and the rest come from the default index.
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH = "torch==2.13.0+cpu"

SETUP_SH = """#!/usr/bin/env bash
# Run once, as root, when Gradescope builds the autograder image (Ubuntu 22.04 base).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q software-properties-common
# The judge needs Python >= 3.11; Ubuntu 22.04 ships 3.10 (3.11 is in its universe component).
add-apt-repository -y universe
apt-get update -q
apt-get install -y -q python3.11 python3.11-venv {extra_apt}
python3.11 -m venv /autograder/venv
/autograder/venv/bin/pip install -q --upgrade pip
{install}
/autograder/venv/bin/python -m judge list
"""

INSTALL_FULL = (
    f"/autograder/venv/bin/pip install -q --extra-index-url {TORCH_INDEX} {TORCH}\n"
    "/autograder/venv/bin/pip install -q -e /autograder/source/triton-judge"
)
# Forward mode judges elsewhere: no torch, no triton here, only what the CLI and the rubric need.
INSTALL_FORWARD = (
    "/autograder/venv/bin/pip install -q --no-deps -e /autograder/source/triton-judge\n"
    "/autograder/venv/bin/pip install -q 'click>=8.1' 'rich>=13'"
)

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Run by Gradescope for each submission. AUTOGRADER_ROOT exists for local tests.
set -u
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
cd "$ROOT/source/triton-judge"
exec "$ROOT/venv/bin/python" -m judge gradescope run --root "$ROOT" {args}
"""


def _source_files():
    """The judge's files that go into the bundle: code, problem packages without their corpora, metadata."""
    for rel in ("pyproject.toml", "README.md"):
        yield REPO_ROOT / rel, rel
    for base in ("judge", "problems"):
        for path in sorted((REPO_ROOT / base).rglob("*")):
            rel = path.relative_to(REPO_ROOT)
            if not path.is_file() or "__pycache__" in rel.parts or path.suffix == ".pyc":
                continue
            if base == "problems" and "submissions" in rel.parts:
                continue  # the self-test corpora: not needed to judge, and they include exploits
            yield path, str(rel)


def bundle(
    problem: Problem, out: Path, *, rubric_path: Path | None, forward: str | None, token_file: Path | None, sandbox: str
) -> list[str]:
    """Write the autograder zip; returns its member names."""
    args = [f"--problem {problem.id}", f"--sandbox {sandbox}"]
    if rubric_path is not None:
        args.append("--rubric rubric.toml --delete-rubric")
    if forward:
        args.append(f"--forward {forward}")
        if token_file is not None:
            args.append("--token-file forward_token")
    setup = SETUP_SH.format(
        extra_apt="" if forward else "bubblewrap", install=INSTALL_FORWARD if forward else INSTALL_FULL
    )
    files = {
        "setup.sh": setup,
        "run_autograder": RUN_AUTOGRADER.format(args=" ".join(args)),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16  # executable, as Gradescope requires
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, text)
        for path, rel in _source_files():
            z.write(path, f"triton-judge/{rel}")
        if rubric_path is not None:
            z.write(rubric_path, "triton-judge/rubric.toml")
        if token_file is not None:
            z.write(token_file, "triton-judge/forward_token")
        names = z.namelist()
    out.write_bytes(buf.getvalue())
    return names


# ---------------------------------------------------------------------- results.json


VISIBILITY_ORDER = ("visible", "after_due_date", "hidden")


def results(graded: dict, execution_time: float, rubric: Rubric | None = None) -> dict:
    """Gradescope's results.json for one graded report.

    Gradescope shows each test by its visibility, but the headline (``output``), the speed test and the
    leaderboard to every student at once: they say only what the rubric shows now (the student view, at
    judging time). The speed test is as visible as the least visible group (it runs only when every group
    passes), and the leaderboard entry is left out while any group is hidden."""
    view = student_view(graded, rubric or Rubric())
    tests = []
    zero = Verdict(graded["verdict"]).scores_zero
    whole = graded["message"] if file_level(graded) else ""
    for i, g in enumerate(graded["groups"], start=1):
        output = group_output(g, whole)
        if zero and g["passed"]:
            output = f"passed, but scores 0: the submission's verdict is {graded['verdict']}"
        tests.append(
            {
                "name": f"{g['name']}: {g['about']}" if g["about"] else g["name"],
                "number": str(i),
                "score": g["earned"],
                "max_score": g["points"],
                "status": "passed" if g["passed"] and not zero else "failed",
                "visibility": g["visibility"],
                "output": output,
                "output_format": "text",
            }
        )
    speed = graded["speed"]
    if speed["max_points"]:
        least = max((VISIBILITY_ORDER.index(g["visibility"]) for g in graded["groups"]), default=0)
        test = {
            "name": "speed",
            "number": str(len(tests) + 1),
            "score": speed["points"],
            "max_score": speed["max_points"],
            "visibility": VISIBILITY_ORDER[least],
            "output_format": "text",
        }
        if speed["scored"]:
            test["status"] = "passed" if speed["points"] >= speed["max_points"] else "failed"
            test["output"] = (
                f"speedup {speed['speedup']:.3g}x" if isinstance(speed.get("speedup"), (int, float)) else "scored"
            )
        else:
            test["output"] = speed.get("reason") or "speed is not scored"
        tests.append(test)
    head = f"{view['verdict']}: {view['message'] or graded['verdict']}"
    error = (graded.get("details") or {}).get("error") or {}
    frames = (error.get("frames") or []) if view["all_shown"] or file_level(graded) else []
    if frames:
        head += "\n" + "\n".join(f"  line {f.get('line')} in {f.get('function')}: {f.get('code')}" for f in frames[-3:])
    out = {
        "score": graded["score"],
        "execution_time": int(round(execution_time)),
        "output": head,
        "output_format": "text",
        "stdout_visibility": "hidden",  # the run's log is for staff
        "tests": tests,
    }
    if isinstance(speed.get("speedup"), (int, float)) and speed["scored"] and view["all_shown"]:
        out["leaderboard"] = [{"name": "speedup", "value": float(speed["speedup"]), "order": "desc"}]
    return out


def run(
    problem: Problem,
    *,
    submission_dir: Path,
    results_path: Path,
    rubric: Rubric,
    sandbox: str,
    device: str,
    forward: str | None,
    token: str | None,
    seed: int | None,
    timeout: float,
) -> dict:
    """Judge the one submission in SUBMISSION_DIR and write results.json; returns it."""
    started = time.monotonic()
    report = platform_report(
        problem,
        submission_dir,
        rubric,
        sandbox=sandbox,
        device=device,
        forward=forward,
        token=token,
        seed=seed,
        timeout=timeout,
        missing=f"no submission file found; name it one of {', '.join(candidate_names(problem))} "
        f"(or upload a single {problem.suffix} file)",
        forward_hint="; ask the course staff to regrade",
    )
    graded = grade(report, problem, rubric)
    doc = results(graded, time.monotonic() - started, rubric)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = results_path.with_name(results_path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(results_path)
    return doc
