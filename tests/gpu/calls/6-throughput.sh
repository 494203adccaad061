#!/usr/bin/env bash
# Device calls of 2026-12-03 (logs in 9edee07:tests/gpu/logs/2026-12-03/): where a graded roster's time goes on the
# H200 and what the session's changes save (issue 13), each part under its own limit, the whole under DEADLINE
# seconds; every full report kept (BENCH_REPORTS: the submit reports, and each roster's reports from its
# results store), all of it packed into $OUT/results.tar.gz.
#   throughput.txt     grade_throughput.py: a softmax roster of N (default 24; accepted and wrong in turn) graded
#                      by this tree, 1 GPU, bwrap, pool auto (THROUGHPUT_LIMIT s); JOBS=4,6 grades it with that many
#                      submissions at once per GPU in turn (default: the command's own); each row says how busy the
#                      host's cores and the GPU were
#   throughput_ab.txt  the same roster graded by the trees AB_TREES (default "out/base .": out/base carried, the
#                      tree before the change) in turn, AB_ROUNDS rounds (default 1), the order swapped each round;
#                      every distinct file graded once first, not counted (--warm), so that no tree pays the first
#                      compiles (2026-12-03 call 3 warmed 4 files only: the first tree paid the rest)
#   latency.txt        judge_latency.py over IDS (default "93 95 96 97"), this tree (LATENCY_LIMIT s)
#   constants.txt      tests/bench/constants_check.py: what the worker's hold on a kernel's globals and Triton's
#                      language costs a check here
#   noscan.txt         tests/gpu/probes/judge_without_scan.py over NOSCAN (default: the probe that swaps Triton's
#                      language as its kernel compiles, and every exploit5_* file of the corpus), static scan off
#   corpus.txt         judge selftest of KINDS (default "rejected accepted") of CORPUS_IDS (default: every problem),
#                      5 jobs, pooled
# PARTS picks and orders them (default "throughput latency").
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=16
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader;
  bwrap --version; } > "$out/env.txt" 2>&1
for p in ${PARTS:-throughput latency}; do
  case $p in
    throughput) part throughput "${THROUGHPUT_LIMIT:-330}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
                  --executors local --pool auto --sandbox bwrap -n "${N:-24}" ${JOBS:+--jobs "$JOBS"} ;;
    throughput_ab) part throughput_ab "${AB_LIMIT:-560}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
                     --executors local --pool auto --sandbox bwrap -n "${N:-24}" --warm --trees ${AB_TREES:-out/base .} \
                     --repeat "${AB_ROUNDS:-1}" ;;
    latency) part latency "${LATENCY_LIMIT:-300}" python3 tests/bench/judge_latency.py ${IDS:-93 95 96 97} --device cuda --sandbox bwrap ;;
    constants) part constants 60 python3 tests/bench/constants_check.py ;;
    noscan) part noscan "${NOSCAN_LIMIT:-240}" python3 tests/gpu/probes/judge_without_scan.py \
              ${NOSCAN:-tests/gpu/probes/093_language_swapped_at_compile.py problems/09[34]-*/submissions/rejected/exploit5_*.py} ;;
    corpus) part corpus "${CORPUS_LIMIT:-400}" bash -c 'for kind in $1; do python3 -m judge selftest $2 \
              --only "/$kind/" --device cuda --jobs 5 --pool auto --seed 1 --sandbox process; echo "selftest $kind: exit $?"; done' \
              _ "${KINDS:-rejected accepted}" "${CORPUS_IDS:-93 94 95 96 97 98 99}" ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=memory.used --format=csv,noheader >> "$out/env.txt" 2>&1
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
