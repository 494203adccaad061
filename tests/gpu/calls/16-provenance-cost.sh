#!/usr/bin/env bash
# Issue 40 on a GPU: every passing case proven by a replay (judge.proofs), what it costs, and the channels closed.
# PARTS picks and orders them (default "lockgpu channels latency"); each part under its own limit, the whole under
# DEADLINE (540 s):
#   lockgpu   the worker's lockdown (judge.untrusted.lockdown) where CUDA runs: tests/test_lockdown.py (the kernel's
#             Landlock and seccomp; process and bwrap), then sandbox/hostile/accepted/writes_own_memory.py judged
#             with --device cuda in the process and bwrap backends, static scan off: AC both (contained), never
#             RTE "ESCAPED"; and the softmax reference's submit on the GPU: AC (CUDA starts under the lockdown)
#   channels  problem 93's issue-40 corpus on the GPU (judge selftest 93 --only exploit7, then 93's
#             constexpr_function_hashes and exception_that_cannot_be_printed, and 99's accepted files), the
#             declared verdicts and expect-gpu lines: the address rule refuses in the worker where a kernel
#             compiles; a side stream by any name (torch.cuda.streams.Stream, torch.Stream with
#             torch.accelerator.set_stream, ExternalStream) and a CUDA graph by module name are RJ at run time;
#             then the same exploit7 files with the static scan off (none AC)
#   latency   judge_latency.py IDS (default "93 94 95 96 97 98") --fresh, bwrap, speed on, each report kept; then
#             each report's tally: cases_proven must equal cases_passed (cases_not_replayable: 99's Inductor
#             group only, not among these)
#   baseline  judge_latency.py IDS --fresh --trees MAIN_TREE . (a checkout of main, carried: e.g. shared/main),
#             ROUNDS (1) rounds, the order swapped each round: today's submit beside this branch's, same machine
# What to look for: lockgpu all AC ("ESCAPED" nowhere); channels "BAD" nowhere; latency every row AC and
# "proven == passed" for each; submit within +15% of main (the issue's H100 figures: 93 21.9 s, 94 21.5, 95 23.3,
# 96 24.2, 97 34.9, 98 49.1; better, the baseline part on the same machine).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out" "$out/reports"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=20 default_deadline=540
source tests/gpu/calls/lib.sh
write_env
IDS=${IDS:-93 94 95 96 97 98}
lat="python3 tests/bench/judge_latency.py --device cuda --sandbox bwrap"
for p in ${PARTS:-lockgpu channels latency}; do
  case $p in
    lockgpu) part lockgpu 150 bash -c '
        python3 -m pytest -q -p no:cacheprovider tests/test_lockdown.py -k "not docker" -rs
        python3 - <<EOF
from pathlib import Path
from judge.options import Options
from judge.problems import find_problem
from judge.session import Session
for backend in ("process", "bwrap"):
    options = Options(sandbox=backend, seed=1, device="cuda", interpret=False, static_scan=False, speed=False,
                      group="small-ragged")
    r = Session(find_problem("93"), Path("sandbox/hostile/accepted/writes_own_memory.py"), options).run()
    print("writes_own_memory", backend, r.verdict.value, r.message[:300])
EOF
        python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox bwrap --no-speed --json \
          | python3 -c "import json,sys; r=json.load(sys.stdin); print(\"softmax\", r[\"verdict\"], r[\"message\"][:200])"' ;;
    channels) part channels 300 bash -c '
        python3 -m judge selftest 93 --only exploit7 --device cuda --jobs 4 --pool auto --seed 1 --sandbox process
        python3 -m judge selftest 93 --only constexpr_function_hashes --device cuda --seed 1 --sandbox process
        python3 -m judge selftest 93 --only exception_that_cannot_be_printed --device cuda --seed 1 --sandbox process
        python3 -m judge selftest 99 --only /accepted/ --device cuda --jobs 3 --pool auto --seed 1 --sandbox process
        python3 - <<EOF
from pathlib import Path
from judge.options import Options
from judge.problems import find_problem
from judge.session import Session
for path in sorted(Path("problems/093-vector-add/submissions").glob("*/exploit7_*.py")):
    if "spins" in path.name:
        continue
    options = Options(sandbox="process", seed=1, device="cuda", interpret=False, static_scan=False, speed=False)
    r = Session(find_problem("93"), path, options).run()
    print("scan off", "BAD" if r.verdict.value == "AC" and "stream" not in path.name and "graph" not in path.name
          else "ok ", r.verdict.value, path.name, r.message[:200])
EOF' ;;
    latency) part latency 300 env JUDGE_TIMELINE="$out/timelines" $lat $IDS --fresh
             python3 - "$out/reports" <<'EOF' | tee "$out/tally.txt"
import json, sys
from pathlib import Path
for f in sorted(Path(sys.argv[1]).rglob("*.json")):
    try:
        r = json.loads(f.read_text())
    except ValueError:
        continue
    t = r.get("timing", {})
    ok = r.get("verdict") == "AC" and t.get("cases_proven") == t.get("cases_passed") and t.get("cases_passed", 0) > 0
    print("ok " if ok else "BAD", r.get("problem", {}).get("id"), r.get("verdict"), "passed", t.get("cases_passed"),
          "proven", t.get("cases_proven"), "not replayable", t.get("cases_not_replayable"), "replays", t.get("replays"),
          "settle s", t.get("replay_settle_seconds"), "tests s", t.get("tests_seconds"), "elapsed", r.get("elapsed_seconds"))
EOF
             ;;
    baseline) [[ -n "${MAIN_TREE:-}" ]] || { echo "baseline: MAIN_TREE not set" | tee "$out/baseline.txt"; continue; }
              part baseline "${BASE_LIMIT:-400}" $lat $IDS --fresh --trees "$MAIN_TREE" . --rounds "${ROUNDS:-1}" ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
