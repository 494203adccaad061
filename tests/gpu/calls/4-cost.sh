#!/usr/bin/env bash
# Device calls of 2026-12-02 (second session, logs in 9edee07:tests/gpu/logs/2026-12-02b/): what the replay check and the head start cost or save `submit` on the H200
# (issues 12 and 13), each part under its own limit, the whole under DEADLINE seconds; every full report is
# kept (BENCH_REPORTS) and all of it packed into one file, $OUT/results.tar.gz.
#   replay94.txt / replay98.txt  tests/bench/replay_cost.py, off/on interleaved (REPLAY94_RUNS, REPLAY98_RUNS)
#   headstart.txt   judge_latency.py --ab JUDGE_HEAD_START: the session's workers spawned before the judge
#                   imports torch (=1) or by the session (=0)
#   latency.txt     judge_latency.py over IDS (default all six), default options
#   throughput.txt  grade_throughput.py, a softmax roster (N, default 24) under THROUGHPUT_LIMIT s
#   throughput_ab.txt  the same roster three times (N, default 12; each under THROUGHPUT_LIMIT s): once to warm
#                   the kernel caches (the roster's files are the same bytes each time: not counted), then with
#                   JUDGE_CHECKS_OUTSIDE_LOCK=0 and =1
#   exit.txt        tests/bench/fast_exit.py 94: JUDGE_FAST_EXIT=0/1 in turn (EXIT_ROUNDS, default 2)
#   wire.txt        tests/bench/wire_transfer.py --device cuda: one 512 MiB output across the pipe, the tree
#                   of out/before (carried: the last commit's judge/shared/wire.py) against this one
# PARTS picks and orders them (default "replay94 replay98 headstart").
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=12
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } > "$out/env.txt" 2>&1
for p in ${PARTS:-replay94 replay98 headstart}; do
  case $p in
    replay94) part replay94 "${REPLAY94_LIMIT:-200}" python3 tests/bench/replay_cost.py 94 --device cuda --runs "${REPLAY94_RUNS:-2}" --sandbox bwrap ;;
    replay98) part replay98 "${REPLAY98_LIMIT:-260}" python3 tests/bench/replay_cost.py 98 --device cuda --runs "${REPLAY98_RUNS:-1}" --sandbox bwrap ;;
    headstart) part headstart "${HEADSTART_LIMIT:-120}" python3 tests/bench/judge_latency.py 94 --device cuda --sandbox bwrap \
                 --ab JUDGE_HEAD_START --rounds "${HEADSTART_ROUNDS:-1}" ;;
    latency) part latency "${LATENCY_LIMIT:-360}" python3 tests/bench/judge_latency.py ${IDS:-93 94 95 96 97 98} --device cuda --sandbox bwrap ;;
    throughput_ab) part throughput_ab "$(( 3 * ${THROUGHPUT_LIMIT:-180} ))" bash -c 'for v in warm 0 1; do
                 echo "== JUDGE_CHECKS_OUTSIDE_LOCK=$v"; JUDGE_CHECKS_OUTSIDE_LOCK=${v/warm/0} timeout -k 10 "$1" python3 \
                 tests/bench/grade_throughput.py --device cuda --problem 94 -n "$2" --executors local --pool auto \
                 --sandbox bwrap; done' _ "${THROUGHPUT_LIMIT:-180}" "${N:-12}" ;;
    exit) part exit "${EXIT_LIMIT:-200}" python3 tests/bench/fast_exit.py 94 reference/094-softmax.py --device cuda --sandbox bwrap \
            --rounds "${EXIT_ROUNDS:-2}" ;;
    wire) part wire "${WIRE_LIMIT:-120}" python3 tests/bench/wire_transfer.py --trees out/before . --device cuda --runs "${WIRE_RUNS:-3}" ;;
    throughput) part throughput "${THROUGHPUT_LIMIT:-180}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 -n "${N:-24}" \
                 --executors local --pool auto --sandbox bwrap ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
