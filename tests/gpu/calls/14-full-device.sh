#!/usr/bin/env bash
# The softmax reference judged (process sandbox, no speed run) while another process takes all of the GPU's
# memory but LEAVE_MIB (default 1024), for HOLD seconds (20), once the judge's memory is reserved (judge.gpu_admission: the judge's entry
# held in the ledger): IE or AC, never a verdict against the file (judge.shared.oom's UNSEEN mark, read by the
# judge only while it sees the GPU full itself). The shorter form of tests/test_device_full.py's first half.
# (Filled before the judge starts, the judge would wait for the memory instead: the admission sees it.)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
exec > >(tee "$out/full-device.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout 300 python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox process --no-speed --seed 1 \
  --json > "$out/full-device.json" &
judge=$!
python3 - <<'PY'
import time
from judge.gpu_admission import Admission
end = time.monotonic() + 120
while time.monotonic() < end and not any(e.held for e in Admission(0).snapshot()):
    time.sleep(0.05)
time.sleep(1.0)
PY
exec 3> >(python3 -c '
import sys, torch
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - int(sys.argv[1])), dtype=torch.uint8, device="cuda")
print("hog holds", held.numel() >> 20, "MiB", flush=True)
sys.stdin.read()' "$(( ${LEAVE_MIB:-1024} << 20 ))")
sleep 2
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
sleep "${HOLD:-20}"
exec 3>&-  # (the hog lets go: a judging that failed for it is judged again, judge.judging)
wait "$judge"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("verdict", r["verdict"], "|", r["message"])' \
  "$out/full-device.json"
