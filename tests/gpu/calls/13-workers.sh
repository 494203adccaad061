#!/usr/bin/env bash
# Device calls of 2026-12-05, fourth to sixth sessions (logs in 9edee07:tests/gpu/logs/2026-12-05d/, 2026-12-05e/
# and 2026-12-05f/): issue 13, the test workers one per core but four (12 on the H200's host,
# judge.options.auto_workers), the driver modules' seeding, the throughput of a longer roster, and the same
# verdicts with parallel workers and with one.
# PARTS picks and orders them; each part under its own limit, the whole under DEADLINE (560 s):
#   warm      one `submit 94` of the reference (bwrap, speed on): the machine's caches, the GPU's ceilings and
#             the reference's trusted kernels are made before anything below is measured
#   workers   judge_latency.py WIDS (default "94 98") --fresh --ab JUDGE_WORKERS=8,12 (8: the old default, 12: the new one),
#             ROUNDS (1) rounds, each submit's timeline under results/timelines
#   latency   judge_latency.py IDS (default "97 95 93 96") --fresh, speed on, bwrap, the defaults, timelines
#             (at most LAT_LIMIT s, default 200)
#   ab        judge_latency.py AIDS (default "94 98") --fresh --ab LAB (a setting's two values, e.g.
#             JUDGE_REPLAY_WORKERS=2,3: required), ROUNDS rounds, timelines, at most AB_LIMIT s (240)
#   replay    judge_latency.py 98 --fresh --ab JUDGE_REPLAY_WORKERS=2,3, ROUNDS rounds, timelines: with 12 test
#             workers 98's last replays settled 5.5 s after its groups (2.3 s with 8)
#   tp        grade_throughput.py: a softmax roster of N (40) per configuration, bwrap, pool auto, JOBS ("12")
#             at once (a list compares them), no --warm (the warm part did that), each grading job's timeline
#             under results/tp-timelines; its verdicts must be the roster's declared ones (exit 1 if not)
#   tpw       grade_throughput.py as tp, no timelines, N (24) per configuration, JOBS jobs at once, each with
#             JW ("1,2") test workers (--job-workers: JUDGE_WORKERS for the grading command), side by side
#   tpab      grade_throughput.py as tpw with each job's default workers and --ab "$AB" (a setting's two values,
#             required), N (24) per value, side by side, REPEAT (1) rounds interleaved,
#             each grading job's timeline under results/tp-timelines (one pair of 24 is not enough: the same
#             setting gave 575 and 439 an hour in two calls on one H200, 2026-12-05 sixth session)
#   wrong     judge selftest CORPUS_IDS (95 96 99) --only /wrong_answer/, CJOBS (4) files at once, seed 1,
#             process sandbox, each file's workers JUDGE_WORKERS=WORKERS (4)
#   wrong1    the same files on one worker each (JUDGE_WORKERS=1), 12 at once: both must give the declared
#             verdicts
#   cgtests   tests/test_litter.py and tests/test_cgroups.py on this machine's cgroups (v2 on the GPU machines)
#   devicefull tests/test_device_full.py: the softmax reference judged while another process holds the GPU's
#             memory but 3 GiB, then 1 GiB (IE or AC, never a verdict against the file; IE at least once), then alone (AC)
# CGW=1: every 20 s, the cpu.weight (v2) or cpu.shares (v1) of each triton-judge cgroup into results/cgweights.txt.
# GPUMEM=1: every 10 s, the device's used memory and each process's (nvidia-smi) into results/gpumem.txt.
# Reports under results/reports (BENCH_REPORTS); all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out" "$out/timelines"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=14 default_deadline=560
source tests/gpu/calls/lib.sh
write_env
lat="python3 tests/bench/judge_latency.py --device cuda --sandbox bwrap"
tl="env JUDGE_TIMELINE=$out/timelines"
if [[ "${CGW:-0}" == 1 ]]; then
  ( while sleep 20; do date +%s; cat /sys/fs/cgroup/triton-judge-*/cpu.weight /sys/fs/cgroup/cpu/triton-judge-*/cpu.shares \
      2>/dev/null | sort | uniq -c; done ) > "$out/cgweights.txt" 2>&1 &
  sampler=$!
fi
if [[ "${GPUMEM:-0}" == 1 ]]; then
  ( while sleep 10; do echo "t $(date +%s) $(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits)";
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits; done ) > "$out/gpumem.txt" 2>&1 &
  gpumem=$!
fi
for p in ${PARTS:-warm workers latency}; do
  case $p in
    warm) part warm 90 python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox bwrap --json ;;
    workers) part workers 240 $tl $lat ${WIDS:-94 98} --fresh --ab JUDGE_WORKERS=8,12 --rounds "${ROUNDS:-1}" ;;
    latency) part latency "${LAT_LIMIT:-200}" $tl $lat ${IDS:-97 95 93 96} --fresh ;;
    ab) part ab "${AB_LIMIT:-240}" $tl $lat ${AIDS:-94 98} --fresh \
          --ab "${LAB:?ab needs LAB, e.g. LAB=JUDGE_REPLAY_WORKERS=2,3}" --rounds "${ROUNDS:-1}" ;;
    replay) part replay 240 $tl $lat 98 --fresh --ab JUDGE_REPLAY_WORKERS=2,3 --rounds "${ROUNDS:-1}" ;;
    tp) mkdir -p "$out/tp-timelines"
        part tp "${LIMIT:-540}" env JUDGE_TIMELINE="$out/tp-timelines" python3 tests/bench/grade_throughput.py \
          --device cuda --problem 94 --executors local --pool auto --sandbox bwrap -n "${N:-40}" --fresh \
          --jobs "${JOBS:-12}" ;;
    tpw) part tpw "${LIMIT:-540}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
           --executors local --pool auto --sandbox bwrap -n "${N:-24}" --fresh --jobs "${JOBS:-12}" \
           --job-workers "${JW:-1,2}" ;;
    tpab) mkdir -p "$out/tp-timelines"
          part tpab "${LIMIT:-540}" env JUDGE_TIMELINE="$out/tp-timelines" python3 tests/bench/grade_throughput.py \
            --device cuda --problem 94 --executors local --pool auto --sandbox bwrap -n "${N:-24}" --fresh \
            --jobs "${JOBS:-12}" --ab "${AB:?tpab needs AB, e.g. AB=JUDGE_REPLAY_WORKERS=1,2}" \
            --repeat "${REPEAT:-1}" ;;
    wrong) part "wrong-w${WORKERS:-4}" "${CORPUS_LIMIT:-260}" env JUDGE_WORKERS="${WORKERS:-4}" \
             python3 -m judge selftest ${CORPUS_IDS:-95 96 99} --only /wrong_answer/ --device cuda \
             --jobs "${CJOBS:-4}" --pool auto --seed 1 --sandbox process ;;
    wrong1) part wrong-w1 "${CORPUS_LIMIT:-260}" env JUDGE_WORKERS=1 \
              python3 -m judge selftest ${CORPUS_IDS:-95 96 99} --only /wrong_answer/ --device cuda \
              --jobs 12 --pool auto --seed 1 --sandbox process ;;
    devicefull) part devicefull 200 env JUDGE_TEST_DEVICE=cuda python3 -m pytest -q -s -rs tests/test_device_full.py ;;
    cgtests) part cgtests 120 python3 -m pytest -q -m "full or not full" tests/test_litter.py tests/test_cgroups.py ;;
  esac
done
[[ -n "${sampler:-}" ]] && kill "$sampler"
[[ -n "${gpumem:-}" ]] && kill "$gpumem"
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
