#!/usr/bin/env bash
# Device calls of 2026-12-05, third session (logs in 9edee07:tests/gpu/logs/2026-12-05c/): issue 13 on a warm machine.
# PARTS picks and orders them (default "warm tp"); each part under its own limit, the whole under
# DEADLINE (560 s):
#   warm      one `submit 94` of the reference (bwrap, speed on): the machine's caches, the GPU's ceilings and
#             the reference's trusted kernels are made before anything below is measured
#   trace     judge_latency.py TRACE_IDS (default "94 98") --fresh with JUDGE_TIMELINE: each submit's timeline
#             (judge/timeline.py) under results/timelines, for tests/bench/timeline_summary.py
#   tp        grade_throughput.py: a softmax roster of N (24), bwrap, pool auto, JOBS (12) at once, no --warm
#             (the warm part did that); its verdicts must be the roster's declared ones (exit 1 if not)
#   startup   tests/bench/worker_start_cost.py --many 12: a worker's start, step by step, alone and 12 at once
#   latency   judge_latency.py IDS (default "94 98 97 95 93 96") --fresh, speed on, bwrap, the defaults, each
#             submit's timeline under results/timelines (as trace)
#   trees     judge_latency.py TRACE_IDS (default "94 98") --warm --fresh --trees out/base . (out/base: an older
#             tree, carried), timelines as trace: the two trees side by side on one machine
#   replay98  judge_latency.py 98 --fresh --ab JUDGE_REPLAY_WORKERS=1,2 --rounds ROUNDS (1)
#   wrong     judge selftest --only /wrong_answer/ of CORPUS_IDS (95 96 97 98 99), 5 jobs, seed 1, process sandbox
#             (WORKERS=1 sets JUDGE_WORKERS=1: one worker per job, for the same verdicts)
# Reports under results/reports (BENCH_REPORTS); all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=14 default_deadline=560
source tests/gpu/calls/lib.sh
write_env
lat="python3 tests/bench/judge_latency.py --device cuda --sandbox bwrap"
tp="python3 tests/bench/grade_throughput.py --device cuda --problem 94 --executors local --pool auto --sandbox bwrap"
for p in ${PARTS:-warm tp}; do
  case $p in
    warm) part warm 90 python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox bwrap --json ;;
    trace) mkdir -p "$out/timelines"
           part trace 150 env JUDGE_TIMELINE="$out/timelines" $lat ${TRACE_IDS:-94 98} --fresh ;;
    tp) part tp "${LIMIT:-230}" $tp -n "${N:-24}" --fresh --jobs "${JOBS:-12}" ;;
    startup) part startup 60 python3 tests/bench/worker_start_cost.py --many 12 ;;
    latency) mkdir -p "$out/timelines"
             part latency 330 env JUDGE_TIMELINE="$out/timelines" $lat ${IDS:-94 98 97 95 93 96} --fresh ;;
    trees) mkdir -p "$out/timelines"
           part trees 300 env JUDGE_TIMELINE="$out/timelines" $lat ${TRACE_IDS:-94 98} --warm --fresh \
             --trees out/base . --rounds "${ROUNDS:-1}" ;;
    replay98) part replay98 240 $lat 98 --fresh --ab JUDGE_REPLAY_WORKERS=1,2 --rounds "${ROUNDS:-1}" ;;
    wrong) part "wrong${WORKERS:+-w$WORKERS}" "${CORPUS_LIMIT:-520}" env ${WORKERS:+JUDGE_WORKERS=$WORKERS} \
             python3 -m judge selftest ${CORPUS_IDS:-95 96 97 98 99} \
             --only /wrong_answer/ --device cuda --jobs 5 --pool auto --seed 1 --sandbox process ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
