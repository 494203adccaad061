#!/usr/bin/env bash
# Device call 3 of 2026-12-01 (evening): what a user waits for and what one H200 grades (issue 13), one after
# the other on a quiet machine, each under its own limit and the whole under DEADLINE seconds:
#   latency.txt     tests/bench/judge_latency.py: `submit` of each reference, with speed, bwrap (targets:
#                   94 <= 20 s, 98 <= 45 s, every one <= 45 s)
#   throughput.txt  tests/bench/grade_throughput.py: a softmax roster (accepted and wrong in turn), one GPU,
#                   bwrap, the worker pool on (target: >= 600 an hour)
#   startup.txt     tests/bench/sandbox_startup.py --pool: a worker's start on the GPU, fresh and from the pool
# Environment: PARTS (default "latency throughput startup"), run in the order latency throughput startup, IDS
# (latency's problems, default all six), N (the roster, default 24), THROUGHPUT_LIMIT (s, default 180), DEADLINE.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
export PYTHONUNBUFFERED=1
parts=" ${PARTS:-latency throughput startup} "
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } 2>&1 | tee "$out/env.txt"
part latency 300 python3 tests/bench/judge_latency.py ${IDS:-93 94 95 96 97 98} --device cuda --sandbox bwrap --markdown "$out/latency.md"
part throughput "${THROUGHPUT_LIMIT:-180}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 -n "${N:-24}" --executors local \
  --pool auto --sandbox bwrap
part startup 60 python3 tests/bench/sandbox_startup.py --device cuda --runs 3 --pool --backends process,bwrap
echo "done at $(( $(date +%s) - start )) s"
