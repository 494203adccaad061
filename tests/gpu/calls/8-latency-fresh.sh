#!/usr/bin/env bash
# Device call 2 of 2026-12-04 (third session; log in tests/gpu/logs/2026-12-04c/call2): `submit` latency as
# a student sees it (issue 13), speed on, bwrap, default options. judge_latency.py --warm --fresh: 94 judged
# once first, not counted (the GPU's ceilings, the reference's trusted kernels), then each reference as a
# fresh copy (a comment of its own appended: a new content digest, so its kernels compile, as an edited
# file's do). Then the same reference file judged again (IDS_SAME, default "94 94 98": 94's kernels are in
# its cache from the warm-up; 98's reference file itself was not judged before). Reports under results/reports.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
source tests/gpu/calls/lib.sh
export BENCH_REPORTS="$out/reports"
(date -u; git rev-parse --short HEAD; nproc) > "$out/env.txt"
timeout 400 python3 tests/bench/judge_latency.py ${IDS:-94 98 97 95 93 96} --device cuda --sandbox bwrap --warm --fresh \
  > "$out/latency_fresh.txt" 2>&1; echo "fresh rc $?"
timeout 170 python3 tests/bench/judge_latency.py ${IDS_SAME:-94 94 98} --device cuda --sandbox bwrap \
  > "$out/latency_same.txt" 2>&1; echo "same rc $?"
tail -9 "$out/latency_fresh.txt" | cut -c1-250; tail -5 "$out/latency_same.txt"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
