#!/usr/bin/env bash
# Device call 2 of 2026-12-01 (evening): the provenance work on the GPU (issues 12, 13, 16), four parts side by
# side (none of them is a speed claim, so they may share the machine):
#   corpus.txt      judge selftest of the rejected, wrong-answer and accepted files of every problem
#                   (the exploit classes: RJ or WA; accepted: AC with the replay check), 5 jobs, pooled
#   bench.txt       tests/gpu/bench_accepted.py: the speed run's replay of the timed calls, every accepted file
#   hostile.txt     the hostile suite under bwrap with the GPU, pooled and not, 3 pytest workers
#   probe99/        tests/gpu/probe_99.sh: problem 99 through Inductor
# bwrap comes from the carried .deb (tests/gpu/fetch-bwrap.sh). Environment: KINDS (the corpus folders, in
# order; default "rejected accepted wrong_answer"), PARTS (default "corpus bench hostile probe99"), DEADLINE,
# BENCH_PROBLEMS (ids whose accepted files bench_accepted.py times; default all), BENCH_SKIP (leave out the
# first N of them: those an earlier call reached), HOSTILE_JOBS (pytest workers of the hostile suite, default 3;
# -v, so that each test's outcome is in the log as it ends, also when the deadline stops the rest), HOSTILE_K
# (pytest -k of the hostile suite, default "bwrap").
# The hostile suite runs whole (-m '': the device-memory bomb and the rest of the full marker included).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 JUDGE_WORKERS=2
if ! command -v bwrap >/dev/null && ls .deb/bubblewrap_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/bwrap-root && dpkg -x .deb/bubblewrap_*.deb /tmp/bwrap-root
  export PATH="/tmp/bwrap-root/usr/bin:$PATH"
fi
deadline=${DEADLINE:-530}
start=$(date +%s)
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } 2>&1 | tee "$out/env.txt"
parts=" ${PARTS:-corpus bench hostile probe99} "
[[ $parts == *" corpus "* ]] && (
  for kind in ${KINDS:-rejected accepted wrong_answer}; do
    l=$(( deadline - ($(date +%s) - start) ))
    (( l < 20 )) && { echo "selftest $kind: skipped, $l s left"; continue; }  # (timeout 0 would mean no limit)
    timeout -k 10 $l python3 -m judge selftest 93 94 95 96 97 98 99 \
      --only "/$kind/" --device cuda --jobs 5 --pool auto --seed 1 --sandbox process
    echo "selftest $kind: exit $? at $(( $(date +%s) - start )) s"
  done
) > "$out/corpus.txt" 2>&1 &
[[ $parts == *" bench "* ]] && timeout -k 10 $deadline python3 tests/gpu/bench_accepted.py --deadline $(( deadline - 20 )) --out "$out" ${BENCH_PROBLEMS:+--problems $BENCH_PROBLEMS} --skip "${BENCH_SKIP:-0}" > "$out/bench.txt" 2>&1 &
[[ $parts == *" hostile "* ]] && (JUDGE_TEST_DEVICE=cuda JUDGE_REQUIRE_SANDBOXES=bwrap timeout -k 10 $deadline \
   python3 -m pytest -v -n "${HOSTILE_JOBS:-3}" -p no:cacheprovider -m '' tests/test_sandboxes.py -k "${HOSTILE_K:-bwrap}" -rfEs; echo "hostile: exit $?") \
   > "$out/hostile.txt" 2>&1 &
[[ $parts == *" probe99 "* ]] && (mkdir -p "$out/probe99"; OUT="$out/probe99" DEADLINE=$(( deadline - 10 )) bash tests/gpu/probe_99.sh; echo "probe99: exit $?") > "$out/probe99.txt" 2>&1 &
wait
[ -d "$out/probe99" ] && (cd "$out" && tar czf probe99.tgz probe99 && rm -rf probe99)
echo "all done at $(( $(date +%s) - start )) s"
for f in corpus bench hostile probe99; do [ -f "$out/$f.txt" ] && { echo "=== $f"; grep -vE '^ok ' "$out/$f.txt" | tail -n 25; }; done
