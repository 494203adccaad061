#!/usr/bin/env bash
# Where `submit`'s time goes inside its processes on the GPU (issue 13: 94's worker spent about 40 ms a case
# beyond its compiles on the H200, against about 18 ms a case in the interpreter on 2 cores, kernels included):
# py-spy (carried: tests/gpu/fetch-pyspy.sh, carry .whl) samples the judge and every worker of
# `submit ID COPY --json` (a fresh copy of the reference, speed on, --sandbox process: py-spy follows plain child
# processes) for each of SPY_IDS (default "94"), and tests/gpu/probes/spy_summary.py says, per kind of process,
# which functions held the samples. Under DEADLINE (default 120 s); results in $OUT/spy.tar.gz (not
# results.tar.gz: it can run in one call before another script).
set -uo pipefail
cd "$(dirname "$0")/../../.."
default_deadline=120
out="${OUT:-gpu-out}/spy"; mkdir -p "$out"
source tests/gpu/calls/lib.sh
write_env
spy=/tmp/pyspy/py_spy-0.4.3.data/scripts/py-spy
if [[ ! -x $spy ]]; then
  mkdir -p /tmp/pyspy && python3 -m zipfile -e .whl/py_spy-0.4.3-*.whl /tmp/pyspy && chmod +x "$spy"
fi
"$spy" --version >> "$out/env.txt" 2>&1
for id in ${SPY_IDS:-94}; do
  copy=$(python3 -c "import sys; sys.path.insert(0, 'tests/bench'); from judge_latency import fresh_copy; \
from judge.problems import find_problem; print(fresh_copy(find_problem('$id').reference_path))")
  part "spy-$id" "${SPY_LIMIT:-100}" "$spy" record --format raw --subprocesses --nonblocking --rate 200 \
    -o "$out/raw-$id.txt" -- python3 -m judge submit "$id" "$copy" --json --seed 1 --sandbox process \
    ${SPY_DEVICE:---device cuda}
  python3 tests/gpu/probes/spy_summary.py "$out/raw-$id.txt" --top 40 > "$out/summary-$id.txt" 2>&1
  head -c 3000 "$out/summary-$id.txt"
done
tar -czf "${OUT:-gpu-out}/spy.tar.gz" -C "${OUT:-gpu-out}" spy && rm -rf "$out"
