#!/usr/bin/env bash
# Red team 4 (issue 40, item 5) on a GPU: every redteam4_* corpus file judged as a student's submit would be
# (python3 -m judge submit N FILE --sandbox bwrap, speed on, default options), one line per file: the file, its
# verdict, its speed score (points of the speed part, "-" when not measured), the first 160 characters of the
# message. The whole under DEADLINE (460 s); each submit under 60 s (an H100 takes 15-25 s each).
# What to look for: no file AC with speed points unless it is in accepted/ (its line says "BAD"); the GPU ideas
# (93 redteam4_graph_capture_aware, 94 redteam4_nan_gate_timed, 96 redteam4_back_to_back_calls_skip) must not
# score: their checked timed call is wrong (WA) or replayed otherwise (RJ). Compare each verdict with the file's
# folder and its verdict-gpu / expect-gpu lines (judge selftest N --only redteam4 --device cuda does that too).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out/reports"
export PYTHONUNBUFFERED=1 default_deadline=${DEADLINE:-460}
source tests/gpu/calls/lib.sh
write_env
for f in $(ls problems/09[3-9]-*/submissions/*/redteam4_*.py | sort); do
  (( $(left) < 45 )) && { echo "skipped (deadline): $f" | tee -a "$out/lines.txt"; continue; }
  p=$(echo "$f" | sed -E 's#problems/0*([0-9]+)-.*#\1#')
  name=$(basename "$f" .py); dir=$(basename "$(dirname "$f")")
  timeout -k 10 60 python3 -m judge submit "$p" "$f" --sandbox bwrap --json > "$out/reports/$p-$name.json" \
    2> "$out/reports/$p-$name.err"
  python3 - "$out/reports/$p-$name.json" "$p" "$dir/$name" <<'PY' | tee -a "$out/lines.txt"
import json, sys
path, p, name = sys.argv[1:]
try:
    r = json.load(open(path))
except ValueError:
    print(f"{p} {name}: no report (timeout or crash)")
    sys.exit()
speed = (r.get("speed") or {}).get("points", r.get("speed_points", "-"))
bad = r["verdict"] == "AC" and not name.startswith("accepted/") and speed not in (None, "-", 0, 0.0)
print(("BAD " if bad else "") + f"{p} {name}: {r['verdict']} speed {speed} | {r['message'][:160]}")
PY
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
