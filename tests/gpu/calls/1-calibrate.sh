#!/usr/bin/env bash
# Device call 1 of 2026-12-01 (evening): the speed clock with the timed calls recorded and replayed (issues 11
# and 12). A smoke bench first (one shape of 93: is the speed run's replay AC on the GPU?); if it is not, the
# call stops there and says so. Then tests/bench/calibrate.py over all six problems.
#   tests/gpu/calls/1-calibrate.sh          (OUT: where the logs go)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
export PYTHONUNBUFFERED=1
start=$(date +%s)
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"; git log -1 --format='commit %H' 2>/dev/null || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
timeout -k 5 90 python3 -m judge bench 93 reference/093-vector-add.py --device cuda --sandbox process --shapes 0,3 \
  --speed-budget 1 --json > "$out/smoke.json" 2> "$out/smoke.err"
echo "smoke: exit $? after $(( $(date +%s) - start )) s"
verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"]); print(r["message"], r["speed"].get("phases"), file=sys.stderr)' "$out/smoke.json" 2>>"$out/env.txt" || echo none)
tail -1 "$out/env.txt"
if [ "$verdict" != AC ]; then
  echo "smoke bench is $verdict: not calibrating"; tail -20 "$out/smoke.err"
  exit 1
fi
left=$(( ${DEADLINE:-545} - ($(date +%s) - start) ))
python3 tests/bench/calibrate.py --problems ${PROBLEMS:-93 94 95 96 97 98} --budget "${BUDGET:-2.5}" \
  --repeat "${REPEAT:-3}" --repeat-problem "${REPEAT_PROBLEM:-96}" --deadline "$left" --out "$out" > "$out/cal.md" 2> "$out/cal.err"
echo "calibrate: exit $? after $(( $(date +%s) - start )) s"
tail -n 12 "$out/cal.err"
grep -E '^\| (9[3-8]|problem)' "$out/cal.md" | cut -c1-400
