"""A litter: one process imports torch and Triton once, then forks a submission's workers from itself.

A worker's start is mostly ``import torch`` (seconds, more when a lone ``submit``'s twelve workers import it at
once beside the judge: docs/measurements, worker starts). A forked
child shares its parent's imported modules page for page and starts at once; only its CUDA context is its own
(the parent never touches CUDA, which does not survive a fork). judge.sandbox.litter, on the judge's side,
starts this module in one sandbox for the workers of one submission: they share that sandbox, which holds the
one submission they all run, and nothing of anybody else's.

The parent runs nothing of any submission: it imports, forks each child onto its pipes (the judge made them
and passed them in; its first argument names them), reports each child's PID, reaps them and reports how each
ended. Each child closes every descriptor but its own three pipes, leads a session of its own, and from there
on is an ordinary worker (judge.untrusted.runner.main): it reads "prepare" (its imports are done, so that is
its CUDA context and the guard's hooks), then "setup", and so on.

What the parent says on its stdout is one JSON object per line: {"ready": true}, {"forked": i, "pid": n},
{"exited": i, "status": s}, {"failed": "why"}. The judge reads it as it reads anything from a sandbox:
bounded, checked, and never trusted with more than this litter's own workers.
"""

from __future__ import annotations

import json
import os
import sys

# Its command line (judge.sandbox.litter): "in,out,err;in,out,err;..." (each child's three pipe ends), then "1"
# where the children run Triton's interpreter (set before triton loads), else "0".


def _say(message: dict) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def _own_scratch(index: int) -> None:
    """The child's scratch: <scratch>/<index> (under bwrap a tmpfs of a worker's size each, judge.sandbox.bwrap;
    a directory with the process backend), as its home, its temporary directory, its working directory and,
    where it was the scratch's, its kernel cache's parent."""
    import tempfile

    base = os.environ.get("HOME", "")
    if not base:
        return
    mine = os.path.join(base, str(index))
    try:
        os.makedirs(mine, exist_ok=True)
        os.chdir(mine)
    except OSError:
        return
    for key in ("HOME", "TMPDIR"):
        if os.environ.get(key) == base:
            os.environ[key] = mine
    if os.environ.get("TRITON_CACHE_DIR") == os.path.join(base, "triton-cache"):
        os.environ["TRITON_CACHE_DIR"] = os.path.join(mine, "triton-cache")
    tempfile.tempdir = None  # (computed afresh from TMPDIR)


def _not_dumpable() -> bool:
    import ctypes

    PR_SET_DUMPABLE, PR_GET_DUMPABLE = 4, 3
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 and libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def _child(index: int, mine: tuple[int, int, int], everyone: list[int]) -> None:
    """In the forked child: become an ordinary worker on its own three pipes."""
    os.setsid()
    _own_scratch(index)
    for target, fd in enumerate(mine):
        os.dup2(fd, target)
    for fd in everyone:
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    code = 1
    try:
        from judge.untrusted.runner import main

        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - as an uncaught error would end a worker started on its own
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        os._exit(code if isinstance(code, int) else 1)


def main() -> int:
    spec, interpret = (sys.argv[1:] + ["", ""])[:2]
    try:
        sets = [tuple(int(x) for x in part.split(",")) for part in spec.split(";") if part]
    except ValueError:
        sets = []
    if not sets or any(len(s) != 3 for s in sets):
        _say({"failed": "no pipes named"})
        return 2
    if interpret == "1":
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    try:
        import torch
        import triton  # noqa: F401

        # What every worker imports before it says "ready" and while it judges, so the children find it done.
        from judge.untrusted import (  # noqa: F401
            bench,
            calls,
            constants,
            determinism,
            guard,
            integrity,
            outputs,
            own_ops,
            runner,
            trace,
            worker_start,
        )

        worker_start.warm_compiler(interpret == "1")
    except BaseException as exc:  # noqa: BLE001 - the judge starts its workers one by one instead
        _say({"failed": f"import: {type(exc).__name__}: {exc}"[:300]})
        return 2
    if torch.cuda.is_initialized():  # (a CUDA context does not survive a fork: each child makes its own)
        _say({"failed": "CUDA was initialised before the fork"})
        return 2
    # A fork copies the calling thread alone: a Python thread started by these imports would be missing, mid-way
    # through whatever it held, in every child. None is; if one ever is, say so. (Loading torch's library starts
    # one native thread, idle on a futex: torch is made to be forked after its import, as its DataLoader's
    # workers are, and no child uses that thread.)
    import threading

    if threading.active_count() != 1:
        _say({"failed": f"{threading.active_count()} Python threads before the fork"})
        return 2
    # Not dumpable, so inherited by every child: a process of the sandbox can then neither read nor write
    # another's memory (/proc/PID/mem), file descriptors (/proc/PID/fd) or registers (ptrace), though they
    # share a user. A red-team file wrote through /proc/PID/mem into its parent and siblings (a
    # loop run in the parent, beyond the child's own cgroup). A child may make itself dumpable again: then
    # only itself is exposed, to its siblings, which run the same file.
    if not _not_dumpable():
        _say({"failed": "could not make the litter's processes undumpable"})
        return 2
    _say({"ready": True})
    everyone = [fd for s in sets for fd in s]
    children: dict[int, int] = {}
    for i, mine in enumerate(sets):
        pid = os.fork()
        if pid == 0:
            _child(i, mine, everyone)
        children[pid] = i
        _say({"forked": i, "pid": pid})
    for fd in everyone:  # the parent keeps no child's pipe: a pipe's reader sees its end when the child's ends
        try:
            os.close(fd)
        except OSError:
            pass
    while children:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        i = children.pop(pid, None)
        if i is None:
            continue  # (an orphan the sandbox's init would reap, never ours)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        try:
            _say({"exited": i, "status": code})
        except OSError:
            pass  # the judge is gone: its end of the sandbox kills what is left
    return 0


if __name__ == "__main__":
    sys.exit(main())
