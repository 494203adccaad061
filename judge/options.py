"""How one judging run is set up: the command line's choices, and the limits they give a problem."""

from __future__ import annotations

from dataclasses import dataclass, field

from judge.sandbox import Limits


@dataclass
class Options:
    device: str = "cpu"  # where tensors live: "cuda" or "cpu"
    interpret: bool = True  # run kernels in Triton's interpreter
    sandbox: str = "process"
    seed: int = 0
    quick: bool = False  # `judge test`: edge examples and a few drawn cases
    group: str | None = None  # only this group
    case: dict | None = None  # only this case (needs group)
    gpu: int | None = None
    max_examples: int | None = None  # override the spec's per-group count
    shrink_seconds: float = 60.0
    threads: int | None = 1
    limits: dict = field(default_factory=dict)  # overrides of the spec's limits
    static_scan: bool = True  # reject tampering found in the source (off only to test the sandboxes)
    speed: bool = True  # measure speed after every group passed (GPU only; submit --no-speed turns it off)
    replay: bool = True  # the replay check (judge.replay); off only to measure what it costs (JUDGE_REPLAY=0)
    bench: dict = field(default_factory=dict)  # overrides of the problem's [bench] settings
    log: object = None  # callable(str) for progress lines on stderr (the GPU lock's wait), or None


def limits_for(problem, options: Options) -> Limits:
    """The problem's [limits], with the command line's overrides, for this mode (interpreter or GPU)."""
    spec = dict(problem.limits)
    spec.update({k: v for k, v in options.limits.items() if v is not None})
    interp = options.interpret
    return Limits(
        case_seconds=float(spec.get("case_seconds_interpret" if interp else "case_seconds",
                                    spec.get("case_seconds", 60))),
        run_seconds=float(spec.get("run_seconds_interpret" if interp else "run_seconds",
                                   spec.get("run_seconds", 900))),
        memory_mb=int(spec.get("memory_mb", 8192)),
        output_bytes=int(spec.get("output_kb", 1024)) << 10,
        processes=int(spec.get("processes", 256)),
        startup_seconds=float(spec.get("startup_seconds", 60)),
        gpu_memory_mb=int(spec["gpu_memory_mb"]) if spec.get("gpu_memory_mb") else None,
    )
