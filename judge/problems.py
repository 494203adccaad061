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
"""

from __future__ import annotations

import importlib.util
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from judge import problem_schema
from judge.verdicts import Verdict

REPO_ROOT = Path(__file__).resolve().parent.parent
PROBLEMS_DIR = Path(os.environ.get("JUDGE_PROBLEMS", REPO_ROOT / "problems"))
REFERENCE_DIR = Path(os.environ.get("JUDGE_REFERENCE", REPO_ROOT / "reference"))

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

    def domain(self, interpret: bool) -> dict:
        merged = dict(self.params)
        if interpret:
            merged.update(self.interpret)
        return merged


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

    @property
    def name(self) -> str:
        return f"{self.id} {self.slug}"

    @property
    def statement_path(self) -> Path:
        return self.directory / "statement.md"

    @property
    def skeleton_path(self) -> Path:
        return self.directory / "skeleton.py"

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
            for path in sorted((root / dirname).glob("*.py")):
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
    outputs = [
        Output(o["name"], o.get("dtype", "input"), o.get("scope", spec.get("check", {}).get("scope", "row")))
        for o in _require(spec, "outputs", list, where)
    ]
    groups = []
    for g in _require(spec, "groups", list, where):
        gw = f"{where} group {g.get('name', '?')}"
        groups.append(Group(
            name=_require(g, "name", str, gw),
            points=float(_require(g, "points", (int, float), gw)),
            about=g.get("about", ""),
            params=_require(g, "params", dict, gw),
            interpret=g.get("interpret", {}),
            examples=tuple(g.get("examples", ())),
            max_examples=int(g.get("max_examples", 20)),
            max_examples_interpret=int(g.get("max_examples_interpret", 6)),
        ))
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
    )
    total = sum(g.points for g in groups) + problem.speed_points
    if abs(total - 100) > 1e-9:
        raise ProblemError(f"{where}: group points plus speed_points must total 100, not {total:g}")
    if problem.speed_points > 0 and not spec.get("bench", {}).get("shapes"):
        raise ProblemError(f"{where}: speed_points > 0 needs [bench] shapes to time")
    return problem


def all_problems() -> list[Problem]:
    problems = []
    if PROBLEMS_DIR.is_dir():
        for d in sorted(PROBLEMS_DIR.iterdir()):
            if (d / "problem.toml").is_file():
                problems.append(load_problem(d))
    return sorted(problems, key=lambda p: p.id)


def find_problem(key: str) -> Problem | None:
    """Look a problem up by id ("95") or slug ("matmul"); loads only that problem."""
    key = str(key).strip().lower()
    if not PROBLEMS_DIR.is_dir():
        return None
    for d in sorted(PROBLEMS_DIR.iterdir()):
        num, _, slug = d.name.partition("-")
        if (d / "problem.toml").is_file() and key in (d.name, slug, num, num.lstrip("0")):
            problem = load_problem(d)
            if key in (str(problem.id), f"{problem.id:03d}", problem.slug, d.name):
                return problem
    return None


def valid_keys() -> str:
    return ", ".join(f"{p.id} ({p.slug})" for p in all_problems())
