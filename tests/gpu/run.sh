#!/usr/bin/env bash
# The GPU run: every problem's corpus judged compiled on the GPU, all dtypes
# (bfloat16 included), every verdict checked; then the references once more
# with their full reports. Writes logs under $OUT (or ./gpu-out).
#
#   tests/gpu/run.sh [PROBLEM ...]        e.g. tests/gpu/run.sh 93 94
#
# Environment: JOBS (submissions judged at once, default 8), SEED (default 1),
# SELFTEST=0 skips the corpus, REF_LIMIT caps each reference run (bwrap only);
# SANDBOX (default process; bwrap is unpacked from .deb/ when not installed:
# fetch it with tests/gpu/fetch-bwrap.sh and carry .deb to the GPU machine).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
sandbox="${SANDBOX:-process}"
if [ "$sandbox" = bwrap ] && ! command -v bwrap >/dev/null && ls .deb/bubblewrap_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/bwrap-root && dpkg -x .deb/bubblewrap_*.deb /tmp/bwrap-root
  export PATH="/tmp/bwrap-root/usr/bin:$PATH"
fi
{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton, hypothesis; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "hypothesis", hypothesis.__version__)'
} | tee "$out/env.txt"
status=0
if [ "${SELFTEST:-1}" = 1 ]; then
  start=$(date +%s)
  python3 -m judge selftest "$@" --device cuda --jobs "${JOBS:-8}" --seed "${SEED:-1}" --sandbox "$sandbox" 2>&1 | tee "$out/selftest.txt"
  status=${PIPESTATUS[0]}
  echo "selftest: exit $status, $(( $(date +%s) - start )) s" | tee -a "$out/selftest.txt"
fi
if [ "$sandbox" = bwrap ]; then
  # The hostile-submission suite under bwrap, with the GPU.
  JUDGE_TEST_DEVICE=cuda JUDGE_REQUIRE_SANDBOXES=bwrap python3 -m pytest -q -n 4 tests/test_sandboxes.py -k bwrap \
    2>&1 | tee "$out/hostile.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  python3 tests/bench/sandbox_startup.py --device cuda --runs 5 2>&1 | tee "$out/startup.txt"
  # The six references judged in full under bwrap, side by side.
  for f in reference/0*.py; do
    id=$(basename "$f" | cut -c1-3)
    timeout "${REF_LIMIT:-480}" python3 -m judge submit "$id" "$f" --device cuda --sandbox bwrap \
      --seed "${SEED:-1}" --json >"/tmp/ref-$id.json" 2>"/tmp/ref-$id.err" &
  done
  wait
  python3 tests/gpu/summarize_reports.py /tmp/ref-*.json 2>&1 | tee "$out/references.txt"
  grep -q "not AC" "$out/references.txt" && status=1
fi
exit "$status"
