#!/usr/bin/env bash
# The GPU run: every problem's corpus judged compiled on the GPU, all dtypes
# (bfloat16 included), every verdict checked; then the references once more
# with their full reports. Writes logs under $OUT (or ./gpu-out).
#
#   tests/gpu/run.sh [PROBLEM ...]        e.g. tests/gpu/run.sh 93 94
#
# Environment: JOBS (submissions judged at once, default 8), SEED (default 1).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton, hypothesis; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__)'
} | tee "$out/env.txt"
start=$(date +%s)
python3 -m judge selftest "$@" --device cuda --jobs "${JOBS:-8}" --seed "${SEED:-1}" 2>&1 | tee "$out/selftest.txt"
status=${PIPESTATUS[0]}
echo "selftest: exit $status, $(( $(date +%s) - start )) s" | tee -a "$out/selftest.txt"
exit "$status"
