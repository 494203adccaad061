#!/usr/bin/env bash
# Device calls of 2026-12-02 (second session, logs in 9edee07:tests/gpu/logs/2026-12-02b/): what `submit` and a
# roster cost on the H200 (issues 12 and 13), each part under its own limit, the whole under DEADLINE seconds;
# every full report is kept (BENCH_REPORTS) and all of it packed into one file, $OUT/results.tar.gz.
#   latency.txt     judge_latency.py over IDS (default all six), default options
#   throughput.txt  grade_throughput.py, a softmax roster (N, default 24) under THROUGHPUT_LIMIT s
#   wire.txt        tests/bench/wire_transfer.py --device cuda: one 512 MiB output across the pipe, the tree
#                   of out/before (carried: the last commit's judge/shared/wire.py) against this one
# PARTS picks and orders them (default "latency throughput").
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=12
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } > "$out/env.txt" 2>&1
for p in ${PARTS:-latency throughput}; do
  case $p in
    latency) part latency "${LATENCY_LIMIT:-360}" python3 tests/bench/judge_latency.py ${IDS:-93 94 95 96 97 98} --device cuda --sandbox bwrap ;;
    wire) part wire "${WIRE_LIMIT:-120}" python3 tests/bench/wire_transfer.py --trees out/before . --device cuda --runs "${WIRE_RUNS:-3}" ;;
    throughput) part throughput "${THROUGHPUT_LIMIT:-180}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 -n "${N:-24}" \
                 --executors local --pool auto --sandbox bwrap ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
