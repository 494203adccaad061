#!/usr/bin/env bash
# Device call of 2026-12-04 (second session): what handing compiled kernels between a submission's
# workers saves (issue 13; judge.exchange.Workers.share_compiles, judge.untrusted.compile_lock).
# For each id in IDS (default "98 97") its reference is judged twice, speed off, bwrap, each time from a
# cold kernel cache (a copy of the file with a token appended: a new content digest, so a new cache): once
# with JUDGE_SHARE_COMPILES=0 JUDGE_COMPILE_LOCK=0 and once with the defaults, the order swapped from one
# id to the next (OFF_ENV: the "off" run's settings instead, e.g. OFF_ENV=JUDGE_DEFER_REPLAYS=0 for the replays
# settled at each group's end). Every report kept; a table in $OUT/results/share.txt; all packed into results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out/reports"
export PYTHONUNBUFFERED=1
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader;
  bwrap --version; git rev-parse --short HEAD 2>/dev/null; } > "$out/env.txt" 2>&1
run() {  # run ID MODE(off|on)
  local id=$1 mode=$2 f tok
  tok=$(date +%s%N)
  f=$(ls reference/0${id}-*.py); cp "$f" "/tmp/ref${id}_${mode}_${tok}.py"; echo "# cold cache $tok" >> "/tmp/ref${id}_${mode}_${tok}.py"
  local t0; t0=$(date +%s.%N)
  if [[ $mode == off ]]; then
    env ${OFF_ENV:-JUDGE_SHARE_COMPILES=0 JUDGE_COMPILE_LOCK=0} timeout -k 10 "$(left)" python3 -m judge submit "$id" "/tmp/ref${id}_${mode}_${tok}.py" \
      --device cuda --sandbox bwrap --no-speed --seed 1 --json > "$out/reports/${id}-${mode}.json" 2> "$out/reports/${id}-${mode}.err"
  else
    timeout -k 10 "$(left)" python3 -m judge submit "$id" "/tmp/ref${id}_${mode}_${tok}.py" \
      --device cuda --sandbox bwrap --no-speed --seed 1 --json > "$out/reports/${id}-${mode}.json" 2> "$out/reports/${id}-${mode}.err"
  fi
  local rc=$?
  python3 - "$out/reports/${id}-${mode}.json" "$id" "$mode" "$rc" "$t0" >> "$out/share.txt" <<'PY'
import json, sys
import time
path, id_, mode, rc, t0 = sys.argv[1:]
wall = time.time() - float(t0)
try:
    d = json.load(open(path)); t = d.get("timing", {})
except Exception as exc:
    print(f"| {id_} | {mode} | rc {rc} | no report ({exc}) |"); sys.exit()
print(f"| {id_} | {mode} | {d.get('verdict')} | {float(wall):.1f} | {d.get('elapsed_seconds')} | {t.get('tests_seconds')} | {t.get('replay_settle_seconds')} | "
      f"{t.get('kernels_compiled')} | {t.get('compile_seconds', 0):.1f} | {t.get('compile_share_seconds', 0)} | {t.get('workers')} |")
PY
}
echo "| id | mode | verdict | wall s | elapsed s | tests s | replay settle s | kernels compiled (loads included) | compile s (summed) | share s | workers |" > "$out/share.txt"
echo "|---|---|---|---|---|---|---|---|---|---|---|" >> "$out/share.txt"
i=0
for id in ${IDS:-98 97}; do
  if (( i % 2 == 0 )); then run "$id" off; run "$id" on; else run "$id" on; run "$id" off; fi
  i=$((i + 1))
  cat "$out/share.txt"
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
