#!/usr/bin/env bash
# Issue 4 on the GPU, in one call: every measurement of the speed work, each part
# guarded (a failure prints its traceback and the rest goes on) and the whole
# under a deadline (DEADLINE seconds, default 510: well under 9 minutes).
#
#   tests/gpu/bench.sh                      logs and tables under $OUT (default ./gpu-out)
#
# 1. environment and the GPU's ceilings (measured, cached under ~/.cache/triton-judge)
# 2. smoke: `judge bench` on two shapes of 93 (one call per sample, and K calls per sample) and of 98 (prepared baseline)
# 3. tests/bench/speed.py: references vs PyTorch and roofline, protocol stability (5 runs),
#    judge latency of submit (94 and 98: the issue's targets); SPEED.md under $OUT
# Environment: OUT, DEADLINE, BUDGET (s of rounds per bench, default 8), RUNS (default 5),
# STABILITY ("94 95"), LATENCY ("94 98"), PROBLEMS ("93 94 95 96 97 98").
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 JUDGE_CACHE_DIR="${JUDGE_CACHE_DIR:-$HOME/.cache/triton-judge}"
deadline="${DEADLINE:-510}"
start=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - start) )); }
part() {  # part NAME SECONDS CMD...: run with a timeout (capped by what is left), log to $out/NAME.txt
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  (( l < 20 )) && { echo "== $name: skipped, $l s left"; return; }
  (( limit > l )) && limit=$l
  echo "== $name (at most ${limit} s)"
  timeout -k 10 "$limit" "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "   exit $rc after $(( $(date +%s) - start )) s total"
  tail -n 25 "$out/$name.txt"
}
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
} 2>&1 | tee "$out/env.txt"
part ceilings 90 python3 -c 'import json; from judge.timing import ceilings; print(json.dumps(ceilings.get(0, refresh=True), indent=1))'
part smoke-93 120 python3 -m judge bench 93 reference/093-vector-add.py --device cuda --sandbox process --shapes 0,3 --speed-budget 3
part smoke-98 150 python3 -m judge bench 98 reference/098-flash-attention-backward.py --device cuda --sandbox process --shapes 4 --speed-budget 3
part speed 9999 python3 tests/bench/speed.py --out "$out" --markdown "$out/SPEED.md" \
  --problems ${PROBLEMS:-93 94 95 96 97 98} --budget "${BUDGET:-8}" --stability ${STABILITY:-94 95} \
  --runs "${RUNS:-5}" --stability-budget 5 --latency ${LATENCY:-94 98} --deadline $(( $(left) - 100 ))
echo "== done in $(( $(date +%s) - start )) s; tables in $out/SPEED.md"
cat "$out/SPEED.md" 2>/dev/null | tail -n 60
