#!/usr/bin/env bash
# Problem 99 on a GPU, in one call (issue 16): the compiled group through Inductor, which the interpreter
# cannot run. Each part under its own timeout, the whole under DEADLINE seconds (default 540).
#
#   tests/gpu/probe_99.sh            logs under $OUT (default ./gpu-out)
#
# 1. the reference, every group (Inductor lowers the triton_op's kernel: launches and operators come from the
#    lowered graph, the replay skips the compiled group with a note)
# 2. the compiled group of the corpus files whose GPU behaviour differs from the interpreter's, and of a probe
#    that computes with PyTorch only while traced (tests/gpu/probes/099_torch_when_compiling.py: RJ expected)
# 3. problem 93's reference, quickly: the worker's changes leave other problems alone
# 4. the whole corpus of 99 (judge selftest), if time is left
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
deadline="${DEADLINE:-540}"
start=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - start) )); }
part() {  # part NAME SECONDS CMD...
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  (( l < 20 )) && { echo "== $name: skipped, $l s left"; return; }
  (( limit > l )) && limit=$l
  echo "== $name (at most ${limit} s)"
  timeout -k 10 "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "   exit $? after $(( $(date +%s) - start )) s total"
  python3 - "$out/$name.txt" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    r = json.loads(text[text.index("{"):])
except ValueError:
    print("\n".join(text.splitlines()[-20:]))
    sys.exit()
print("  ", r["verdict"], r["message"][:400])
for g in r.get("groups", []):
    f = g.get("failure") or {}
    print("    ", g["name"], "passed" if g["passed"] else "FAILED", g.get("cases_run"), (f.get("message") or g.get("skipped") or "")[:300])
print("   notes:", r.get("notes"))
print("   timing:", {k: r.get("timing", {}).get(k) for k in ("cases", "replays", "worker_seconds", "tests_seconds")})
PY
}
python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee "$out/env.txt"
sub=problems/099-compile-safe-add/submissions
j="python3 -m judge"
part reference 240 $j submit 99 reference/099-compile-safe-add.py --device cuda --sandbox process --no-speed --json --seed 1
for f in wrong_answer/plain_jit_wrapper accepted/custom_op_with_fake rejected/torch_fallback_in_op; do
  part "$(basename $f)" 120 $j test 99 "$sub/$f.py" --device cuda --sandbox process --group compiled --json --seed 1
done
part probe_torch_when_compiling 120 $j test 99 tests/gpu/probes/099_torch_when_compiling.py --device cuda --sandbox process --group compiled --json --seed 1
part ref93 120 $j test 93 reference/093-vector-add.py --device cuda --sandbox process --json --seed 1
echo "== selftest 99 (at most $(left) s)"
timeout -k 10 "$(left)" $j selftest 99 --device cuda 2>&1 | tee "$out/selftest.txt" | tail -25
