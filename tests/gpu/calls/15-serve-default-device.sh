#!/usr/bin/env bash
# The README's start command of `judge serve` on a GPU host (issue 42): no --device, a relative --state, tokens.
# What confirms it: /health says device cuda; the job's progress named a group while it ran (the relative
# --state reached the job process); the reference of 93 ends AC with its speed measured (speed.scored true,
# a speedup); the student, before a deadline that hides a group, sees the speed withheld and no speedup on the
# leaderboard, while staff see both. Under 4 minutes on an H100.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
exec > >(tee "$out/serve-default-device.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
work=$(mktemp -d)
printf 'name,token,role\nann,ann-token-0123456789abcd,student\nta,ta-token-0123456789abcdef,staff\n' > "$work/tokens.csv"
printf 'deadline = 2999-01-01T00:00:00Z\nsecret_seed = "gpu-call-secret-0123"\n[problems.93]\nvisible_before_deadline = ["small-ragged", "block-edges", "views", "extreme-values"]\nvisible_after_deadline = "all"\n' > "$work/rubric.toml"
root=$PWD
(cd "$work" && PYTHONPATH="$root" exec timeout 300 python3 -m judge serve --port 8399 --tokens tokens.csv \
   --rubric rubric.toml --state grading --jobs 1 --sandbox process > serve.log 2>&1) &
serve_pid=$!
timeout 300 python3 - "$work" <<'PY'
import base64, json, sys, time, urllib.request
base = "http://127.0.0.1:8399"
def call(method, path, body=None, token="ta-token-0123456789abcdef"):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())
for _ in range(240):
    try:
        health = call("GET", "/health"); break
    except OSError:
        time.sleep(0.5)
print("health:", health["device"], health["slots"], "slot(s)")
src = base64.b64encode(open("reference/093-vector-add.py", "rb").read()).decode()
ann = "ann-token-0123456789abcd"
job = call("POST", "/submissions", {"problem": 93, "source": src, "filename": "add.py"}, ann)["id"]
groups = set()
while True:
    doc = call("GET", f"/submissions/{job}", token=ann)
    if doc["status"] == "running" and doc.get("progress"):
        groups.add(doc["progress"].get("group") or doc["progress"].get("phase"))
    if doc["status"] == "done":
        break
    time.sleep(0.3)
staff = call("GET", f"/submissions/{job}")
print("progress seen by the student:", sorted(groups))
print("staff: verdict", staff["verdict"], "speed scored", staff["report"]["speed"].get("scored"),
      "speedup", staff["report"]["speed"].get("speedup"))
print("student: verdict", doc["verdict"], "speed", json.dumps(doc["report"]["speed"]))
print("leaderboard (student):", call("GET", "/leaderboard/93", token=ann)["entries"])
print("leaderboard (staff):", call("GET", "/leaderboard/93")["entries"])
PY
kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null
echo "--- serve.log"; cat "$work/serve.log"
