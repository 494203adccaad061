"""The records a worker's replies become (judge.replies.parsers makes them): frozen, typed, bounded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Frame:
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class ErrorInfo:
    """An exception in the worker, described as data (judge.untrusted.errors.classify)."""

    category: str  # compile, memory, runtime, rule or contract: the verdict it leads to (judge.rules)
    type: str
    message: str
    line: int | None = None
    code: str = ""
    frames: tuple[Frame, ...] = ()
    fatal: bool = False  # a CUDA error that poisons the worker's context
    at_import: bool = False
    at_register: bool = False  # raised by a factory entry point's register(namespace) (judge.calls)
    hint: str = ""  # a contract error's advice (judge.untrusted.calls)

    def as_dict(self) -> dict:
        out = {
            "category": self.category,
            "type": self.type,
            "message": self.message,
            "line": self.line,
            "code": self.code,
            "frames": [f.__dict__ for f in self.frames],
            "fatal": self.fatal,
            "at_import": self.at_import,
        }
        if self.hint:
            out["hint"] = self.hint
        if self.at_register:
            out["at_register"] = True
        return out


@dataclass(frozen=True)
class Evidence:
    """What the worker recorded around a call (judge.untrusted.guard)."""

    own_launches: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    other_launches: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    torch_ops: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    started: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # thread/process starts
    tampered: tuple[str, ...] = ()
    threads_left: tuple[str, ...] = ()
    calls_without_own_launch: int = 0  # timed calls only
    compiled: int | None = None  # kernels compiled so far in this worker
    compile_seconds: float | None = None
    own_ops: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # the submission's operators
    graph_ops: tuple[str, ...] | None = None  # a compiled call: what Dynamo's graph calls (None: not compiled)
    # The worker's own split of a case's seconds (judge.untrusted.runner.Worker.call): PHASES, for the
    # timeline only; nothing is decided on them.
    phases: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


PHASES = ("inputs", "call", "after")


@dataclass(frozen=True)
class Returned:
    """One item the entry point returned; ``tensor`` holds its values when it is an exact tensor."""

    kind: str  # "tensor" or "other"
    type: str = ""
    tensor_subclass: bool = False
    dtype: str = ""
    shape: tuple[int, ...] = ()
    device: str = ""
    kernel_wrote: bool = False  # its memory was given to one of the file's kernels
    aliases_input: bool = False
    derived: bool = False  # a value the judge derived from the call (a gradient): checked, not traced
    tensor: object = None  # torch.Tensor (decoded from its frame) or None


@dataclass(frozen=True)
class TensorRef:
    """A tensor in a recorded call: a view (offset and strides in elements of ``dtype``) of one storage."""

    storage: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str

    def as_wire(self) -> dict:
        return {"ref": [self.storage, self.offset, list(self.shape), list(self.strides), self.dtype]}


@dataclass(frozen=True)
class Tagged:
    """A recorded value that is not a JSON scalar: ``tag`` is one of judge.shared.tracing.TAGS."""

    tag: str
    value: object  # a tuple of values for "tuple" and "list", a value for "constexpr", else a string


@dataclass(frozen=True)
class TraceStorage:
    """A block of memory a recorded call used: an input's, one the call made, or one from outside the call."""

    id: int
    nbytes: int
    device: str  # "cpu" or "cuda"
    origin: str  # "input", "made", "outside" or "empty"
    arg: int | None = None  # input: the argument's index
    event: int | None = None  # made: the event that made it
    snapshot: bytes | None = None  # outside: its bytes when the call first used it (None: over the budget)


@dataclass(frozen=True)
class TraceEvent:
    kind: str  # "launch" (a kernel of the file), "op" (a PyTorch operator) or "foreign" (a kernel from elsewhere)
    kernel: str = ""
    grid: tuple[int, ...] | None = None
    op: str = ""  # e.g. "copy_.default"
    args: tuple = ()
    kwargs: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    made: tuple[int | None, ...] = ()  # op: the storage each returned tensor made (None: not new memory)
    unchanged: tuple[int, ...] | None = None  # launch: storages it was given and left as they were (None: unknown)


@dataclass(frozen=True)
class Trace:
    """A judged call's launch sequence, as the worker recorded it (judge.untrusted.trace), for the replay."""

    storages: tuple[TraceStorage, ...] = ()
    events: tuple[TraceEvent, ...] = ()
    outputs: tuple[TensorRef | None, ...] = ()
    truncated: str = ""  # why nothing was recorded (too many events or storages), or ""


@dataclass(frozen=True)
class CaseResult:
    id: int
    returned: str  # "tuple", "list" or the type name of the single returned object
    outputs: tuple[Returned, ...]
    inputs_modified: tuple[int, ...]
    evidence: Evidence
    trace: Trace | None = None  # the call's launch sequence (None: the worker sent none)

    def tensors(self) -> list | None:
        """The returned tensors, when every returned item is one (else None)."""
        if not self.outputs or any(o.tensor is None for o in self.outputs):
            return None
        return [o.tensor for o in self.outputs]


@dataclass(frozen=True)
class CaseError:
    id: int
    error: ErrorInfo
    evidence: Evidence


@dataclass(frozen=True)
class Hello:
    ok: bool
    versions: Mapping[str, str]
    device_name: str
    error: ErrorInfo | None = None
    startup: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class KernelInfo:
    """A compiled kernel's resources (GPU only): registers and spills per thread, shared memory, warps, stages."""

    name: str
    own: bool
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ProfileSample:
    """One profiled sample (judge.untrusted.profiling.summarize): the GPU span of its calls' kernels."""

    span_s: float  # first kernel's start to last kernel's end, over the sample's K calls
    busy_s: float  # the kernels' durations added up
    kernels: int
    calls: tuple[float, ...] = ()  # the same span per call (empty when attributed by GPU order)
    ranges: int = 0  # call ranges found in the records


@dataclass(frozen=True)
class ProfileResult:
    """The CUDA profiler's clock of one profiled request, or why there is none."""

    status: str  # "ok", "no kernels", "unavailable" or "cpu"
    note: str = ""
    method: str = ""  # how records were attributed to calls: linked, runtime, gpu-order
    samples: tuple[ProfileSample, ...] = ()
    records: int = 0


@dataclass(frozen=True)
class BenchResult:
    """The worker's raw clocks for one timing request; the judge computes every statistic.

    Times are per *sample* of ``per_sample`` calls (judge.untrusted.bench).
    """

    mode: str  # "events" or "cpu"
    times: tuple[float, ...]
    host: tuple[float, ...] = ()
    overhead: tuple[float, ...] = ()
    device_times: tuple[float, ...] = ()
    sync_gaps: tuple[float, ...] = ()
    checkable: tuple[int, ...] = ()
    out_bytes: int = 0
    worker_wall: float = 0.0
    note: str = ""
    evidence: Evidence = field(default_factory=Evidence)
    kernels: tuple[KernelInfo, ...] = ()
    per_sample: int = 1  # K: calls per sample
    valid: tuple[bool, ...] = ()  # per sample: every call was queued before the GPU reached the start event
    retries: int = 0  # samples redone with a longer hold
    invalid: int = 0  # samples still not queued after the retries
    hold_s: float = 0.0  # the hold the request ended with
    holds: tuple[float, ...] = ()  # per sample
    enqueue: tuple[float, ...] = ()  # per sample: host seconds from launching the hold to the start query
    attempts: tuple[int, ...] = ()  # per sample: tries it took
    profile: ProfileResult | None = None  # a profiled request's second clock
    extra: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))  # other numbers, bounded


@dataclass(frozen=True)
class BenchError:
    error: ErrorInfo


@dataclass(frozen=True)
class ReplayResult:
    """What the replay worker (judge.untrusted.replay) made of a recorded call on fresh inputs."""

    id: int
    ok: bool
    outputs: tuple[Returned, ...] = ()
    writers: tuple[int | None, ...] = ()  # per output: the last event that changed its values
    event: int = -1  # on failure: the event that failed (-1: the request itself)
    # on failure: "record" (the record asks for the impossible), "run" (a kernel or operator raised), "compile" (a
    # GPU would not compile it) or "rule" (a kernel reads or makes an address: judge.untrusted.addresses)
    kind: str = ""
    error: ErrorInfo | None = None
    compiled: int = -1  # kernels the replay compiled as it ran (-1: not counted; 0 after a compile pass that did)


@dataclass(frozen=True)
class CompileResult:
    """The replay worker's compile pass over a record (judge.untrusted.record_replay.CompilePass): how many
    kernels it compiled (-1: not counted), how many launches it could not compile ahead, and its seconds."""

    id: int
    compiled: int
    failed: int
    seconds: float


@dataclass(frozen=True)
class BenchOutputs:
    present: bool
    returned: str = ""
    outputs: tuple[Returned, ...] = ()
    trace: Trace | None = None  # the timed call's launch sequence, when the judge asked for records


# --------------------------------------------------------------------------- primitives


@dataclass(frozen=True)
class BenchTrimmed:
    """The worker let go of everything it held for timing (judge.untrusted.bench.trim)."""
