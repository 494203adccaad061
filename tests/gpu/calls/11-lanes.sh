#!/usr/bin/env bash
# Device calls of 2026-12-05, second session (logs in 9edee07:tests/gpu/logs/2026-12-05b/): issue 13 with the lanes
# running ahead into the next group (judge.lanes), the speed run's trim and the capacity errors of the first
# session, and the shared process table. Each part under its own limit, the whole under DEADLINE (540 s);
# PARTS picks and orders them (default "latency"):
#   latency     judge_latency.py IDS (default "94 98 97 95 93 96") --warm --fresh, speed on, bwrap, the defaults:
#               issue 13's Done-when figures, from files no kernel cache has seen
#   replay98    judge_latency.py 98 --fresh --ab JUDGE_REPLAY_WORKERS=1,2 --rounds ROUNDS: one replay worker against
#               two (a lone submit's default on a GPU), one order then the other
#   throughput  grade_throughput.py --fresh --warm (WARM= leaves it out): a softmax roster of N (24), bwrap, pool auto, JOBS (12,8)
#               submissions at once, in turn; its verdicts must be the roster's declared ones (exit 1 if not)
#   wrong       judge selftest of the wrong_answer files of CORPUS_IDS (95 96 97 98 99), 5 jobs, seed 1, process
#               sandbox (as 6-throughput.sh's corpus part), the workers each job picks; JUDGE_WORKERS=1 for one
# Reports under results/reports (BENCH_REPORTS); all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=14
source tests/gpu/calls/lib.sh
write_env
lat="python3 tests/bench/judge_latency.py --device cuda --sandbox bwrap"  # (timeout runs programs, not functions)
for p in ${PARTS:-latency}; do
  case $p in
    latency) part latency 330 $lat ${IDS:-94 98 97 95 93 96} --warm --fresh ;;
    replay98) part replay98 240 $lat 98 --fresh --ab JUDGE_REPLAY_WORKERS=1,2 --rounds "${ROUNDS:-1}" ;;
    throughput) part throughput "${LIMIT:-520}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
                  --executors local --pool auto --sandbox bwrap -n "${N:-24}" ${WARM---warm} --fresh --jobs "${JOBS:-12,8}" ;;
    wrong) part wrong "${CORPUS_LIMIT:-520}" python3 -m judge selftest ${CORPUS_IDS:-95 96 97 98 99} \
             --only /wrong_answer/ --device cuda --jobs 5 --pool auto --seed 1 --sandbox process ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
