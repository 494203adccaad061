#!/usr/bin/env bash
# Issue 41's settings object on a GPU: the finished experiments' switches are gone, each path they chose between
# kept at its default, and what the judge passed its children through the environment goes on their command line
# now (a grading job's --workers and --pool, selftest's --pool-socket, a litter's pipes). Every verdict must be as
# before; each part under its own limit, the whole under DEADLINE (540 s). PARTS picks and orders them (default
# "refs corpus roster"):
#   refs    `submit` of each reference (IDS, default "94 98 93 95"), bwrap, speed on, a fresh copy each (its
#           kernels compile): AC and a speed score each; the speed run's phases (its warm-up and checks ahead,
#           the checks after the lock) are in the reports
#   corpus  judge selftest CORPUS_IDS (default "93 94 95") --device cuda --jobs 4 --pool auto, process sandbox:
#           every declared verdict, through `submit` children that take their workers from selftest's pool
#   roster  grade_throughput.py: a softmax roster of N (12), bwrap, pool auto, JOBS (4) at once: the roster's
#           declared verdicts (exit 1 if not), through job processes given their workers and pool on their
#           command line
# Reports under results/reports (BENCH_REPORTS); all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out/reports"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=20
source tests/gpu/calls/lib.sh
write_env
refs() {  # each reference, a fresh copy (new bytes: a kernel cache of its own), one line per report
  local id f copy
  for id in "$@"; do
    f=$(ls reference/0${id}-*.py); copy="/tmp/settings-ref${id}-$(date +%s%N).py"
    cp "$f" "$copy"; echo "# fresh $(date +%s%N)" >> "$copy"
    python3 -m judge submit "$id" "$copy" --device cuda --sandbox bwrap --seed 1 --json > "$out/reports/ref${id}.json" \
      2> "$out/reports/ref${id}.err"
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); s = r.get("speed", {})
print(sys.argv[2], r["verdict"], r.get("score"), "speedup", s.get("geomean_speedup"), "elapsed", r.get("elapsed_seconds"),
      "phases", {k: v for k, v in (s.get("phases") or {}).items() if k.startswith(("ahead", "prewarm", "check", "lock"))})' \
      "$out/reports/ref${id}.json" "$id" || tail -5 "$out/reports/ref${id}.err"
  done
}
for p in ${PARTS:-refs corpus roster}; do
  case $p in
    refs) part refs 300 bash -c "$(declare -f refs); out=$out; refs ${IDS:-94 98 93 95}" ;;
    corpus) part corpus "${CORPUS_LIMIT:-240}" python3 -m judge selftest ${CORPUS_IDS:-93 94 95} --device cuda \
              --jobs 4 --pool auto --seed 1 --sandbox process ;;
    roster) part roster "${ROSTER_LIMIT:-200}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
              --executors local --pool auto --sandbox bwrap -n "${N:-12}" --fresh --jobs "${JOBS:-4}" ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
