#!/usr/bin/env bash
# Device call 3 of 2026-12-01 (evening): what a user waits for and what one H200 grades (issue 13), one after
# the other on a quiet machine, each under its own limit and the whole under DEADLINE seconds:
#   latency.txt     tests/bench/judge_latency.py: `submit` of each reference, with speed, bwrap (targets:
#                   94 <= 20 s, 98 <= 45 s, every one <= 45 s)
#   throughput.txt  tests/bench/grade_throughput.py: a softmax roster (accepted and wrong in turn), one GPU,
#                   bwrap, the worker pool on (target: >= 600 an hour)
#   prestart.txt   judge_latency.py --ab JUDGE_SPEED_PRESTART: submit with the speed run's workers spawned after
#                   the tests (=0) and during them (=1), in turn (PRESTART_IDS, default 94; PRESTART_ROUNDS)
#   startup.txt     tests/bench/sandbox_startup.py --pool: a worker's start on the GPU, fresh and from the pool
#   replay.txt      tests/bench/replay_cost.py: what the replay check adds to `submit` on the GPU
# Environment: PARTS (default "latency throughput startup replay"; prestart only when named), run in the order
# latency prestart throughput startup replay, IDS (latency's problems,
# default all six), N (the roster, default 24), THROUGHPUT_LIMIT (s, default 180), REPLAY_IDS, REPLAY_RUNS and
# REPLAY_LIMIT (replay_cost.py: default "94 98", 1 run, 150 s), DEADLINE.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
export PYTHONUNBUFFERED=1
parts=" ${PARTS:-latency throughput startup replay} "
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } 2>&1 | tee "$out/env.txt"
part latency 300 python3 tests/bench/judge_latency.py ${IDS:-93 94 95 96 97 98} --device cuda --sandbox bwrap --markdown "$out/latency.md"
part prestart "${PRESTART_LIMIT:-200}" python3 tests/bench/judge_latency.py ${PRESTART_IDS:-94} --device cuda --sandbox bwrap \
  --ab JUDGE_SPEED_PRESTART --rounds "${PRESTART_ROUNDS:-1}" --warm
part throughput "${THROUGHPUT_LIMIT:-180}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 -n "${N:-24}" --executors local \
  --pool auto --sandbox bwrap
part startup 60 python3 tests/bench/sandbox_startup.py --device cuda --runs 3 --pool --backends process,bwrap
part replay "${REPLAY_LIMIT:-150}" python3 tests/bench/replay_cost.py ${REPLAY_IDS:-94 98} --device cuda --runs "${REPLAY_RUNS:-1}" --sandbox bwrap
echo "done at $(( $(date +%s) - start )) s"
