"""A cgroup per worker, for the limits bubblewrap does not have (memory, processes).

Works with cgroup v2 (one unified tree) and v1 (a directory per controller)
when the judge may create cgroups (as root, or in a delegated subtree). When it
may not, ``Cgroup.create`` returns None and the caller falls back to rlimits
and the judge's memory watchdog (and says so).
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import threading
import time
from pathlib import Path

from judge.shared import niceness

ROOT = Path("/sys/fs/cgroup")
PREFIX = "triton-judge-"  # then the judge's PID and a random part: triton-judge-<pid>-<hex>
STALE_SECONDS = 60.0  # a cgroup younger than this is never taken for a dead judge's (see sweep_stale)
_swept = threading.Event()


def _write(path: Path, value) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:
        return False


def _weight(cpu_share: int) -> int:
    """The scheduler weight of ``cpu_share`` processes at this process's nice (1024 for one at nice 0): a worker
    weighs what the process that starts it weighs (judge.shared.niceness says why)."""
    return niceness.weight(niceness.own()) * cpu_share


def _cap(dirs: list[Path], v2: bool, memory_bytes: int, pids: int) -> bool:
    """Write a cgroup's memory and process caps (v2: its one directory; v1: memory's, then pids'), and no swap
    beyond the memory; whether the caps were taken."""
    if v2:
        ok = _write(dirs[0] / "memory.max", memory_bytes) and _write(dirs[0] / "pids.max", pids)
        _write(dirs[0] / "memory.swap.max", 0)
        return ok
    ok = _write(dirs[0] / "memory.limit_in_bytes", memory_bytes) and _write(dirs[1] / "pids.max", pids)
    _write(dirs[0] / "memory.memsw.limit_in_bytes", memory_bytes)  # absent without swap accounting
    return ok


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class Cgroup:
    def __init__(self, dirs: list[Path], v2: bool, entry: list[Path] | None = None):
        self.dirs = dirs
        self.v2 = v2
        # Where enter() puts a process: the cgroup itself, or (a v2 cgroup made to hold cgroups of its own,
        # create(nested=True)) a leaf below it, since v2 lets no cgroup both hold processes and hand its
        # controllers down.
        self.entry = entry or dirs

    @classmethod
    def create(cls, memory_bytes: int, pids: int, nested: bool = False, cpu_share: int = 1) -> Cgroup | None:
        """A new cgroup with these caps; ``nested``: one that :meth:`child` can make cgroups in (a litter's
        sandbox, judge.sandbox.litter: a cgroup of its own for each child, inside the litter's).

        It is also one entity of the CPU scheduler, weighted as ``cpu_share`` processes (a litter: its
        children) at this process's nice: under contention its processes share that, however many they are.
        Without it, under cgroup v1, a fork bomb's hundreds of spinning processes each weigh as much as the
        judge's threads, and a small host gives no verdict for minutes (a red-team file, with a litter or
        without). Under v2 the cgroup has the cpu controller where its parent hands it down."""
        name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        if not _swept.is_set():
            _swept.set()
            sweep_stale()
        if (ROOT / "cgroup.controllers").is_file():
            # Our own cgroup first (a delegated subtree); as root, the top of
            # the tree too: where the judge sits in a cgroup
            # that holds processes, so it cannot hand the memory and pids
            # controllers down (cgroup v2's no-internal-processes rule), while
            # the root cgroup has them enabled for its children.
            parents = [ROOT / _own_v2_path()]
            if os.geteuid() == 0 and parents[0] != ROOT:
                parents.append(ROOT)
            for parent in parents:
                d = parent / name
                try:
                    d.mkdir()
                except OSError:
                    continue
                group = cls([d], v2=True)
                ok = _cap([d], True, memory_bytes, pids)
                _write(d / "cpu.weight", max(1, min(10000, round(100 * _weight(cpu_share) / 1024))))  # (100: 1024's)
                # (Where the controllers cannot be handed down, it is a cgroup like any other: child() then
                # fails, and a litter's children share its caps.)
                if ok and nested and _write(d / "cgroup.subtree_control", "+memory +pids"):
                    leaf = cls._make(d / "entry")
                    if leaf is not None:
                        group.entry = [leaf]
                    else:
                        _write(d / "cgroup.subtree_control", "-memory -pids")
                if ok:
                    return group
                group.remove()
            return None
        mem, pid_dir = ROOT / "memory" / name, ROOT / "pids" / name
        try:
            mem.mkdir()
            pid_dir.mkdir()
        except OSError:
            cls([p for p in (mem, pid_dir) if p.exists()], v2=False).remove()
            return None
        group = cls([mem, pid_dir], v2=False)
        if not _cap([mem, pid_dir], False, memory_bytes, pids):
            group.remove()
            return None
        cpu = cls._make(ROOT / "cpu" / name)  # (after memory and pids, which the code reads as dirs[0] and [1])
        if cpu is not None:
            group.dirs.append(cpu)
            _write(cpu / "cpu.shares", max(2, _weight(cpu_share)))
        return group

    @staticmethod
    def _make(d: Path) -> Path | None:
        try:
            d.mkdir()
            return d
        except OSError:
            return None

    def child(self, name: str, memory_bytes: int, pids: int) -> Cgroup | None:
        """A cgroup inside this one with its own caps (each also counts against this one's), removed with it;
        None where it cannot be made (the caller then has only this one's caps and figures)."""
        dirs = []
        for d in self.dirs:
            made = self._make(d / name)
            if made is None:
                break
            dirs.append(made)
        group = Cgroup(dirs, self.v2)
        if len(dirs) < len(self.dirs):
            group.remove()
            return None
        if not _cap(dirs, self.v2, memory_bytes, pids):
            group.remove()
            return None
        return group

    @classmethod
    def of_container(cls, container_id: str) -> Cgroup | None:
        """The memory cgroup Docker made for a container on this host, where the judge can read it
        (cgroupfs or systemd driver, v1 or v2); None for a remote engine or an unknown layout."""
        if (ROOT / "cgroup.controllers").is_file():
            candidates, v2 = (
                [ROOT / "system.slice" / f"docker-{container_id}.scope", ROOT / "docker" / container_id],
                True,
            )
        else:
            candidates = [
                ROOT / "memory" / "docker" / container_id,
                ROOT / "memory" / "system.slice" / f"docker-{container_id}.scope",
            ]
            v2 = False
        for d in candidates:
            if (d / "memory.stat").is_file():
                return cls([d], v2=v2)
        return None

    def enter(self, pid: int | None = None) -> None:
        """Move ``pid`` (default: this process) into the cgroup; children follow."""
        pid = os.getpid() if pid is None else pid
        for d in self.entry:
            (d / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        """Every process in it, those in the cgroups below it too."""
        out = set()
        for d in self.dirs:
            for procs in d.rglob("cgroup.procs"):
                for line in _read(procs).split():
                    out.add(int(line))
        return out

    def memory_bytes(self) -> int | None:
        """Anonymous and shared-memory pages (the page cache is not counted: it is reclaimable)."""
        stat = {}
        for line in _read(self.dirs[0] / "memory.stat").splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                stat[key] = int(value)
        keys = ("anon", "shmem") if self.v2 else ("total_rss", "total_shmem")
        if keys[0] not in stat:
            return None
        return sum(stat.get(k, 0) for k in keys)

    def oom_killed(self) -> bool:
        if self.v2:
            events = _read(self.dirs[0] / "memory.events")
        else:
            events = _read(self.dirs[0] / "memory.oom_control")
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill_all(self, timeout: float = 5.0) -> None:
        if self.v2 and _write(self.dirs[0] / "cgroup.kill", 1):
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def remove(self) -> None:
        self.kill_all()
        # The deepest first: a cgroup with cgroups inside cannot be removed.
        below = sorted({p for d in self.dirs for p in d.rglob("*") if p.is_dir()}, key=lambda p: -len(p.parts))
        for d in below + list(self.dirs):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def sweep_stale(min_age: float = STALE_SECONDS) -> list[Path]:
    """Remove the cgroups a judge left when it was killed before it could (its own are removed as its workers
    close): those named for a judge whose PID is no process now, that hold no process and are older than
    ``min_age``. The first create() of each judge calls it. Returns what it removed."""
    if (ROOT / "cgroup.controllers").is_file():
        v2, parents = True, {ROOT / _own_v2_path(), ROOT}
    else:
        v2, parents = False, {ROOT / "memory", ROOT / "pids", ROOT / "cpu"}
    removed = []
    for parent in parents:
        try:
            found = [d for d in parent.iterdir() if d.name.startswith(PREFIX) and d.is_dir()]
        except OSError:
            continue
        for d in found:
            m = re.fullmatch(re.escape(PREFIX) + r"(\d+)-[0-9a-f]+", d.name)
            if m is None or _alive(int(m.group(1))):
                continue
            try:
                if time.time() - d.stat().st_mtime < min_age:
                    continue
            except OSError:
                continue
            group = Cgroup([d], v2)
            try:
                if group.pids():
                    continue  # (something still runs in it: not ours to end)
                group.remove()
            except OSError:
                continue  # (another judge swept it meanwhile)
            if not d.exists():
                removed.append(d)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _own_v2_path() -> str:
    """This process's cgroup in the unified tree, e.g. 'user.slice/...' ('' for the root)."""
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        if line.startswith("0::"):
            return line[3:].strip().lstrip("/")
    return ""
