#!/usr/bin/env bash
# Device call of 2026-12-06, tenth session: the softmax reference judged (process sandbox, no speed run) while
# another process holds all of the GPU's memory but LEAVE_MIB (default 1024): IE or AC, never a verdict against
# the file (judge.shared.oom's UNSEEN mark, read by the judge only while it sees the GPU full itself). The
# shorter form of tests/test_device_full.py's second half, for a call with little device time left.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}"; mkdir -p "$out"
exec > >(tee "$out/full-device.txt") 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
exec 3> >(python3 -c '
import sys, torch
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(0, free - int(sys.argv[1])), dtype=torch.uint8, device="cuda")
print("hog holds", held.numel() >> 20, "MiB", flush=True)
sys.stdin.read()' "$(( ${LEAVE_MIB:-1024} << 20 ))")
sleep 8
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
timeout 120 python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox process --no-speed --seed 1 \
  --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print("verdict", r["verdict"], "|", r["message"])'
exec 3>&-
wait
