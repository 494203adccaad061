#!/usr/bin/env bash
# Issue 39: judges in company on one GPU (judge.gpu_admission). PARTS picks and orders them (default: all but
# tp), each under its own limit (about 4 minutes on an H100 of 16 cores; tp about 6), the whole under DEADLINE
# (540 s); a summary table last. Reports and timelines packed into $OUT/results.tar.gz.
#   alone      each reference (93-98, or ALONE_IDS) judged alone, fresh copies, speed on: verdict, wall, speedup (~4 min cold)
#   t8         8 `judge submit` at once (the six, 94 and 95 twice): AC, speedups within 3% of alone's
#   t16        the same with 16
#   bomb       94's device-memory bomb beside the six references: the bomb MLE (or RJ), the others AC
#   mixed      `judge serve` judging 10 corpus files + `judge grade` of 8 softmax files + 4 submits, at once:
#              every verdict as declared
#   outside    another program fills the GPU (all but 1 GiB, for HOLD=15 s) during a submit's tests, its
#              replays, its speed run's timed part: AC or IE, never RJ/MLE/WA
#   lockcheck  from t8's and t16's timelines: no judge's GPU work overlaps another's timed part
#   tp         `judge grade` of N=60 softmax files (half wrong) with the default options (no --jobs): files per
#              hour, verdicts as declared (grade_throughput.py; LIMIT=480 s)
# The device's memory and the admission ledger are sampled every 5 s into results/gpumem.txt.
# For a call of ~4 minutes: PARTS="alone t8 lockcheck"; then PARTS="bomb outside"; then PARTS="mixed"; PARTS=tp.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PART_TAIL=12 default_deadline=540
source tests/gpu/calls/lib.sh
write_env
co="python3 tests/bench/company.py --out $out --sandbox ${SANDBOX:-bwrap}"
( while sleep 5; do echo "t $(date +%s) $(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits)"
    python3 -c 'from judge.gpu_admission import Admission
e = Admission(0).snapshot()
print("ledger", len(e), "held", sum(x.held for x in e), "GiB", round(sum(x.bytes for x in e) / 2**30, 1),
      "timed", round(max([x.timed for x in e] + [0]) / 2**30, 1), "timing", sum(x.timing for x in e))' 2>&1; done
) > "$out/gpumem.txt" 2>&1 &
sampler=$!
for p in ${PARTS:-alone t8 t16 bomb mixed outside lockcheck}; do
  case $p in
    alone) part alone 300 $co alone ${ALONE_IDS:+--ids $ALONE_IDS} ;;
    t8) part t8 300 $co together --n 8 ;;
    t16) part t16 300 $co together --n 16 ;;
    bomb) part bomb 240 $co bomb ;;
    mixed) part mixed 300 $co mixed ;;
    outside) part outside 300 $co outside --hold "${HOLD:-15}" ;;
    lockcheck) part lockcheck 60 $co lockcheck ;;
    tp) part tp "${LIMIT:-480}" python3 tests/bench/grade_throughput.py --device cuda --problem 94 \
          --executors local --sandbox "${SANDBOX:-bwrap}" -n "${N:-60}" --fresh ;;
  esac
done
kill "$sampler" 2>/dev/null
echo "== summary"
$co summary | tee "$out/summary.txt"
[[ -f "$out/tp.txt" ]] && grep -E "per_hour|NOT as declared|\| local" "$out/tp.txt" | tail -5
echo "peak device memory (MiB): $(awk '$1=="t"{split($3,a,","); if (a[1]+0>m) m=a[1]+0} END{print m}' "$out/gpumem.txt")"
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
