"""Cgroups the judge makes for its workers (judge.sandbox.cgroups), on this host's real cgroup file system.

A litter's children each have a cgroup inside the litter's (tests/test_litter.py checks them in use); here,
what is left when a judge is killed before it could remove its own: the next judge removes them.
"""

import subprocess
import sys

import pytest

from judge.sandbox import cgroups
from judge.sandbox.cgroups import Cgroup, sweep_stale


def _can_make() -> bool:
    probe = Cgroup.create(1 << 30, 64)
    if probe is not None:
        probe.remove()
    return probe is not None


needs_cgroups = pytest.mark.skipif(
    not _can_make(), reason="no cgroups can be made here (not root, no delegated subtree)"
)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid  # (reaped: no process has that number now, unless the host gave it again since)


@needs_cgroups
def test_a_workers_cgroup_weighs_as_many_processes_as_it_holds_workers_for_the_cpu():
    one, three = Cgroup.create(1 << 30, 64), Cgroup.create(1 << 30, 64, cpu_share=3)
    try:
        for group, share in ((one, 1), (three, 3)):
            if group.v2:
                weight = group.dirs[0] / "cpu.weight"
                if weight.exists():  # (where the parent hands the cpu controller down)
                    assert int(weight.read_text()) == 100 * share
            else:
                assert [d.parent.name for d in group.dirs] == ["memory", "pids", "cpu"]
                assert int((group.dirs[2] / "cpu.shares").read_text()) == 1024 * share
    finally:
        one.remove()
        three.remove()
    assert not any(d.exists() for d in one.dirs + three.dirs)


def _made_as(pid: int, monkeypatch, **kw) -> Cgroup:
    """A real cgroup named as judge ``pid`` names its own. (Made so, not renamed: a cgroup v2 directory under the
    root could not be renamed on the GPU machine, EPERM, 2026-12-06.)"""
    with monkeypatch.context() as m:
        m.setattr(cgroups.os, "getpid", lambda: pid)
        group = Cgroup.create(1 << 30, 64, **kw)
    assert group is not None and all(d.name.startswith(f"{cgroups.PREFIX}{pid}-") for d in group.dirs)
    return group


@needs_cgroups
def test_a_killed_judges_cgroups_are_removed_by_the_next_and_no_others(monkeypatch):
    dead = _dead_pid()
    # What a judge of PID ``dead`` left: its cgroups (a litter's holds its children's).
    nested = _made_as(dead, monkeypatch, nested=True)
    assert nested.child("child-0", 1 << 29, 32) is not None
    left = [nested, _made_as(dead, monkeypatch)]
    mine = Cgroup.create(1 << 30, 64)  # a live judge's (this one's), empty: stays
    busy = _made_as(dead, monkeypatch)  # a dead judge's that something still runs in: stays
    busy_moved = busy.dirs
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        busy.enter(sleeper.pid)
        assert sweep_stale(min_age=3600.0) == []  # all younger than that: none is taken for a dead judge's
        removed = sweep_stale(min_age=0.0)
        # (Others of dead judges may go too: one of this host's own, killed within the last minute.)
        assert {d for g in left for d in g.dirs} <= set(removed)
        assert all(not cgroups._alive(int(d.name.split("-")[2])) for d in removed)
        assert not any(d.exists() for g in left for d in g.dirs)
        assert all(d.exists() for d in mine.dirs) and all(d.exists() for d in busy_moved)
    finally:
        sleeper.kill()
        sleeper.wait()
        Cgroup(busy_moved, busy.v2).remove()
        mine.remove()
    assert not any(d.exists() for d in busy_moved + mine.dirs)
