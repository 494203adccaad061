#!/usr/bin/env bash
# Device calls 2 and 3 of 2026-12-04 (third session; logs in 9edee07:tests/gpu/logs/2026-12-04c/call2 and call3):
# issue 13's figures as students and a course see them, from files no kernel cache has seen (each student's
# file differs, and the caches are keyed by content). PARTS picks and orders the parts (call 2 ran
# PARTS=latency, call 3 PARTS=throughput; default both):
#   latency     judge_latency.py IDS --warm --fresh (94 judged once first, not counted: the GPU's ceilings,
#               the reference's trusted kernels; then each reference as a copy with a comment of its own,
#               whose kernels compile as an edited file's do), speed on, bwrap; then the same reference file
#               judged again (IDS_SAME, default "94 94 98": 94's kernels are in its cache from the warm-up).
#   throughput  grade_throughput.py --fresh --warm: a softmax roster of N (24), bwrap, pool auto, JOBS
#               submissions at once per GPU in turn (default "8,12"), under LIMIT seconds (530). WARM= (empty)
#               leaves out --warm (the roster's warm-up: the reference's trusted kernels and the GPU's ceilings,
#               already warm on a machine that judged 94 in an earlier call).
# Reports under results/reports; all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
source tests/gpu/calls/lib.sh
export BENCH_REPORTS="$out/reports"
(date -u; git rev-parse --short HEAD; nproc) > "$out/env.txt"
for p in ${PARTS:-latency throughput}; do
  case $p in
    latency)
      timeout 400 python3 tests/bench/judge_latency.py ${IDS:-94 98 97 95 93 96} --device cuda --sandbox bwrap --warm \
        --fresh > "$out/latency_fresh.txt" 2>&1; echo "fresh rc $?"
      timeout 170 python3 tests/bench/judge_latency.py ${IDS_SAME:-94 94 98} --device cuda --sandbox bwrap \
        > "$out/latency_same.txt" 2>&1; echo "same rc $?"
      tail -9 "$out/latency_fresh.txt" | cut -c1-250; tail -5 "$out/latency_same.txt" ;;
    throughput)
      timeout "${LIMIT:-530}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 --executors local \
        --pool auto --sandbox bwrap -n "${N:-24}" ${WARM---warm} --fresh --jobs "${JOBS:-8,12}" > "$out/throughput_fresh.txt" 2>&1
      echo "rc $?"; tail -15 "$out/throughput_fresh.txt" | cut -c1-400 ;;
  esac
done
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
