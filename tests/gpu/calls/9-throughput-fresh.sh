#!/usr/bin/env bash
# Device call 3 of 2026-12-04 (third session; log in tests/gpu/logs/2026-12-04c/call3): a softmax roster as a
# course has it (issue 13): grade_throughput.py --fresh (every configuration grades files no kernel cache has
# seen: each student's file differs, and the caches are keyed by content), --warm (what is shared: the
# reference's workers, the GPU's ceilings), 24 files (accepted and wrong in turn), bwrap, pool auto, JOBS
# submissions at once per GPU in turn (default "8,12"). One row per configuration in results/throughput_fresh.txt.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
source tests/gpu/calls/lib.sh
export BENCH_REPORTS="$out/reports"
(date -u; git rev-parse --short HEAD; nproc) > "$out/env.txt"
timeout "${LIMIT:-530}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 --executors local --pool auto \
  --sandbox bwrap -n "${N:-24}" --warm --fresh --jobs "${JOBS:-8,12}" > "$out/throughput_fresh.txt" 2>&1; echo "rc $?"
tail -15 "$out/throughput_fresh.txt" | cut -c1-400
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
