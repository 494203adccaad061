"""Problems are data: one directory each under problems/, found and read here.

A problem directory holds:

* ``problem.toml`` - the machine-readable spec: id, slug, entry point, outputs,
  limits, checker settings, score, and the test groups with their parameter
  domains (see problems/README.md for every key);
* ``statement.md`` - what the student reads;
* ``skeleton.py`` - where the student starts;
* ``golden.py`` - ``make_inputs`` (parameters -> tensors), ``golden`` (the right
  answer in float64) and ``naive`` (a straightforward same-precision PyTorch
  version, which sets the error the checker tolerates);
* ``submissions/<verdict>/*.py`` - the self-test corpus.

The Triton reference solution lives in ``reference/<dir name>.py``, outside
anything a sandbox mounts. Adding a problem touches no judge code.

A problem of ``kind = "answers"`` is worked by hand: its submission is a TOML
file of named numbers, checked part by part against ``[[parts]]`` in
problem.toml (judge.answers); it has ``statement.md``, ``skeleton.toml`` and a
corpus of ``submissions/<verdict>/*.toml``, and no golden.py, reference or
worker.
"""

from __future__ import annotations

import importlib.util
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from judge import problem_schema
from judge.settings import REPO_ROOT, settings
from judge.verdicts import Verdict

REFERENCE_DIR = REPO_ROOT / "reference"

DTYPES = ("float32", "float16", "bfloat16")
# corpus folder -> the verdict its submissions must get (judge.verdicts.VERDICTS)
VERDICT_DIRS = {v.directory: v.value for v in Verdict if v.directory}


class ProblemError(Exception):
    """A problem directory is malformed (a bug in the problem, not the submission)."""


@dataclass(frozen=True)
class Output:
    name: str
    dtype: str  # "input" (the case's dtype) or a fixed dtype name
    scope: str  # "element", "row" or "tensor": over what the naive error is pooled


@dataclass(frozen=True)
class Group:
    name: str
    points: float
    about: str
    params: dict
    interpret: dict  # overrides of params in interpreter mode
    examples: tuple
    max_examples: int
    max_examples_interpret: int
    call: str = "direct"  # how its cases call the entry point: "direct", "compile" or "grad" (judge.calls)

    def domain(self, interpret: bool) -> dict:
        merged = dict(self.params)
        if interpret:
            merged.update(self.interpret)
        return merged


MISTAKE_REL = 1e-3  # a wrong answer within 0.1% of a known mistake gets that mistake's hint


@dataclass(frozen=True)
class Mistake:
    """A wrong answer we know how students reach, and the hint that names the step that goes wrong."""

    hint: str
    values: tuple[float, ...] = ()  # the wrong answers themselves
    ratios: tuple[float, ...] = ()  # wrong answers as multiples of the right one (a unit or a factor of 2 off)


@dataclass(frozen=True)
class Part:
    """One named answer of an answers problem: its exact value, tolerance, unit, points and hints."""

    name: str
    about: str
    value: float
    unit: str
    points: float
    rel_tol: float
    abs_tol: float
    hint: str  # the general hint, for a wrong answer no known mistake explains
    mistakes: tuple[Mistake, ...]

    def close(self, got: float, target: float, rel_floor: float = 0.0) -> bool:
        """GOT is TARGET within this part's tolerance (at least REL_FLOOR of it; a few ulps of slack for decimals)."""
        allowed = max(self.abs_tol, self.rel_tol * abs(target), rel_floor * abs(target)) + 4 * math.ulp(target)
        return abs(got - target) <= allowed

    def accepts(self, got: float) -> bool:
        return self.close(got, self.value)

    def tolerance_text(self) -> str:
        """Which answers count, in words (the exact value itself is never shown)."""
        if self.rel_tol == 0 and self.abs_tol == 0:
            return "only the exact value counts"
        parts = []
        if self.rel_tol:
            parts.append(f"{self.rel_tol * 100:g}% of the exact value")
        if self.abs_tol:
            parts.append(f"{self.abs_tol:g}{' ' + self.unit if self.unit else ''}")
        return "answers within " + " or ".join(parts) + " count"

    def hint_for(self, got: float) -> tuple[str, bool]:
        """(the hint, whether a known mistake explains GOT)."""
        # A known mistake is recognised within the part's tolerance of it, or 0.1% of it when that is wider
        # (a student rounds a wrong answer as much as a right one).
        for m in self.mistakes:
            wrong = list(m.values) + [r * self.value for r in m.ratios]
            if any(self.close(got, w, MISTAKE_REL) for w in wrong):
                return m.hint, True
        return self.hint, False


@dataclass
class Problem:
    id: int
    slug: str
    title: str
    directory: Path
    entry_point: str
    signature: str
    arity: int
    outputs: list[Output]
    limits: dict
    check: dict
    speed_points: float
    groups: list[Group]
    spec: dict = field(repr=False)
    _golden: object = field(default=None, repr=False)
    kind: str = "kernel"  # "kernel" (a Triton file, judged by judge.session) or "answers" (judge.answers)
    parts: list[Part] = field(default_factory=list)  # kind "answers": the named answers (groups mirror them)
    # The entry point as a factory: "namespace" (called once per worker with a fresh secret operator namespace,
    # it returns the callable the cases call), or None (the entry point is that callable).
    factory: str | None = None
    scan_allow: tuple[str, ...] = ()  # static-scan rules this problem lifts ([rules] allow)
    grad_wrt: tuple[int, ...] = ()  # call = "grad": the arguments the gradients are taken with respect to
    grad_outputs: tuple[Output, ...] = ()  # ... and their names, dtypes and scopes

    @property
    def entry_arity(self) -> int:
        """The positional arguments of the entry point itself: a factory takes one (the namespace)."""
        return 1 if self.factory else self.arity

    def outputs_for(self, group: Group | None) -> list[Output]:
        """What a case of ``group`` returns: the entry's outputs, then for a grad group the gradients."""
        extra = list(self.grad_outputs) if group is not None and group.call == "grad" else []
        return list(self.outputs) + extra

    def compile_backend(self, interpret: bool) -> str:
        """torch.compile's backend for call = "compile" groups. Inductor compiles the kernels itself on a GPU;
        in the interpreter it cannot (a kernel that runs on the CPU has nothing Inductor can lower), so there
        Dynamo's graph runs eagerly."""
        spec = self.spec.get("compile", {})
        return spec.get("backend_interpret", "eager") if interpret else spec.get("backend", "inductor")

    def calls(self) -> set[str]:
        return {g.call for g in self.groups}

    @property
    def suffix(self) -> str:
        """The submission's file extension: ``.py`` for a kernel, ``.toml`` for answers."""
        return ".toml" if self.kind == "answers" else ".py"

    @property
    def has_reference(self) -> bool:
        """Kernel problems have a reference solution (judged AC in the self-test, timed by speed runs)."""
        return self.kind == "kernel"

    @property
    def name(self) -> str:
        return f"{self.id} {self.slug}"

    @property
    def statement_path(self) -> Path:
        return self.directory / "statement.md"

    @property
    def skeleton_path(self) -> Path:
        return self.directory / f"skeleton{self.suffix}"

    @property
    def reference_path(self) -> Path:
        return REFERENCE_DIR / f"{self.directory.name}.py"

    @property
    def golden(self):
        """The problem's golden.py, loaded once (trusted code of the problem)."""
        if self._golden is None:
            path = self.directory / "golden.py"
            spec = importlib.util.spec_from_file_location(f"judge_golden_{self.id}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            missing = [fn for fn in self.golden_interface() if not callable(getattr(module, fn, None))]
            if missing:
                raise ProblemError(f"{path} must define {', '.join(f'{fn}()' for fn in missing)}")
            self._golden = module
        return self._golden

    def golden_interface(self) -> list[str]:
        """The functions golden.py must define: the correctness trio, and the speed run's when speed is scored."""
        if self.kind != "kernel":
            return []
        needed = ["make_inputs", "golden", "naive"]
        if self.speed_points > 0:
            needed += ["bench_args", "work"]
            if self.spec.get("bench", {}).get("torch_baseline", True):
                needed.append("pytorch")
        return needed

    def corpus(self) -> list[tuple[str, Path]]:
        """(expected verdict, path) for every self-test submission."""
        out = []
        root = self.directory / "submissions"
        for dirname, verdict in VERDICT_DIRS.items():
            for path in sorted((root / dirname).glob(f"*{self.suffix}")):
                out.append((verdict, path))
        return out


def _require(spec: dict, key: str, kind, where: str):
    if key not in spec:
        raise ProblemError(f"{where}: missing '{key}'")
    value = spec[key]
    if not isinstance(value, kind):
        raise ProblemError(f"{where}: '{key}' must be {kind.__name__ if isinstance(kind, type) else kind}")
    return value


def load_problem(directory: Path) -> Problem:
    where = str(directory / "problem.toml")
    try:
        spec = tomllib.loads((directory / "problem.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProblemError(f"{where}: {exc}") from None
    wrong = problem_schema.check(spec, where)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise ProblemError(wrong[0] + more)
    if spec.get("kind", "kernel") == "answers":
        return _load_answers(spec, directory, where)
    outputs = [
        Output(o["name"], o.get("dtype", "input"), o.get("scope", spec.get("check", {}).get("scope", "row")))
        for o in _require(spec, "outputs", list, where)
    ]
    groups = []
    for g in _require(spec, "groups", list, where):
        gw = f"{where} group {g.get('name', '?')}"
        groups.append(
            Group(
                name=_require(g, "name", str, gw),
                points=float(_require(g, "points", (int, float), gw)),
                about=g.get("about", ""),
                params=_require(g, "params", dict, gw),
                interpret=g.get("interpret", {}),
                examples=tuple(g.get("examples", ())),
                max_examples=int(g.get("max_examples", 20)),
                max_examples_interpret=int(g.get("max_examples_interpret", 6)),
                call=g.get("call", "direct"),
            )
        )
    score = spec.get("score", {})
    problem = Problem(
        id=_require(spec, "id", int, where),
        slug=_require(spec, "slug", str, where),
        title=_require(spec, "title", str, where),
        directory=directory,
        entry_point=_require(spec, "entry_point", str, where),
        signature=_require(spec, "signature", str, where),
        arity=_require(spec, "arity", int, where),
        outputs=outputs,
        limits=spec.get("limits", {}),
        check=spec.get("check", {}),
        speed_points=float(score.get("speed_points", 0)),
        groups=groups,
        spec=spec,
        factory=spec.get("factory"),
        scan_allow=tuple(spec.get("rules", {}).get("allow", ())),
        grad_wrt=tuple(spec.get("grad", {}).get("wrt", ())),
        grad_outputs=tuple(
            Output(o["name"], o.get("dtype", "input"), o.get("scope", "element"))
            for o in spec.get("grad", {}).get("outputs", ())
        ),
    )
    total = sum(g.points for g in groups) + problem.speed_points
    if abs(total - 100) > 1e-9:
        raise ProblemError(f"{where}: group points plus speed_points must total 100, not {total:g}")
    if problem.speed_points > 0 and not spec.get("bench", {}).get("shapes"):
        raise ProblemError(f"{where}: speed_points > 0 needs [bench] shapes to time")
    return problem


PART_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _load_answers(spec: dict, directory: Path, where: str) -> Problem:
    """An answers problem: its parts, and a Group per part so that reports, rubrics and platforms see groups."""
    parts, names = [], set()
    for i, p in enumerate(spec["parts"]):
        pw = f"{where} parts[{i}] ({p.get('name', '?')})"
        name = p["name"]
        if not PART_NAME.match(name):
            raise ProblemError(
                f"{pw}: a part's name is its key in the student's file: lower-case letters, "
                "digits and _ (starting with a letter)"
            )
        if name in names:
            raise ProblemError(f"{pw}: a second part named '{name}'")
        names.add(name)
        part = Part(
            name=name,
            about=p.get("about", ""),
            value=float(p["value"]),
            unit=p["unit"],
            points=float(p["points"]),
            rel_tol=float(p.get("rel_tol", 0)),
            abs_tol=float(p.get("abs_tol", 0)),
            hint=p["hint"],
            mistakes=tuple(
                Mistake(m["hint"], tuple(map(float, m.get("values", ()))), tuple(map(float, m.get("ratios", ()))))
                for m in p.get("mistakes", ())
            ),
        )
        if not math.isfinite(part.value) or part.points <= 0 or part.rel_tol < 0 or part.abs_tol < 0:
            raise ProblemError(f"{pw}: value must be finite, points > 0 and tolerances >= 0")
        for m in part.mistakes:
            for wrong in list(m.values) + [r * part.value for r in m.ratios]:
                if part.accepts(wrong):
                    raise ProblemError(
                        f"{pw}: the mistake {wrong:g} ('{m.hint[:40]}...') is within the tolerance "
                        "of the answer, so it would be accepted"
                    )
        parts.append(part)
    groups = [
        Group(
            name=p.name,
            points=p.points,
            about=p.about,
            params={},
            interpret={},
            examples=(),
            max_examples=1,
            max_examples_interpret=1,
        )
        for p in parts
    ]
    problem = Problem(
        id=spec["id"],
        slug=spec["slug"],
        title=spec["title"],
        directory=directory,
        entry_point="",
        signature=f"answers ({len(parts)} parts, TOML)",
        arity=0,
        outputs=[],
        limits={},
        check={},
        speed_points=0.0,
        groups=groups,
        spec=spec,
        kind="answers",
        parts=parts,
    )
    total = sum(p.points for p in parts)
    if abs(total - 100) > 1e-9:
        raise ProblemError(f"{where}: the parts' points must total 100, not {total:g}")
    return problem


def problems_dir() -> Path:
    """The folder of problem packages (judge.settings: JUDGE_PROBLEMS, else problems/)."""
    return settings().problems


def all_problems() -> list[Problem]:
    problems = []
    if problems_dir().is_dir():
        for d in sorted(problems_dir().iterdir()):
            if (d / "problem.toml").is_file():
                problems.append(load_problem(d))
    return sorted(problems, key=lambda p: p.id)


def find_problem(key: str) -> Problem | None:
    """Look a problem up by id ("95") or slug ("matmul"); loads only that problem."""
    key = str(key).strip().lower()
    if not problems_dir().is_dir():
        return None
    for d in sorted(problems_dir().iterdir()):
        num, _, slug = d.name.partition("-")
        if (d / "problem.toml").is_file() and key in (d.name, slug, num, num.lstrip("0")):
            problem = load_problem(d)
            if key in (str(problem.id), f"{problem.id:03d}", problem.slug, d.name):
                return problem
    return None


def valid_keys() -> str:
    return ", ".join(f"{p.id} ({p.slug})" for p in all_problems())
