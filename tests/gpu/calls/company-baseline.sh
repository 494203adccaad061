#!/usr/bin/env bash
# Issue 39's motivating measurement, reproduced on the tree as it lands: 8 students' `judge submit` at once
# (fresh copies of the six references, 94 and 95 twice), bwrap, default options, after one warm submit.
#   PARTS  "warm shared" by default; IDS the problems (default "93 94 94 95 95 96 97 98"); ALONE=1 judges each
#          copy alone first (tests/bench/concurrent_submits.py --alone)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PART_TAIL=16 default_deadline=540
source tests/gpu/calls/lib.sh
write_env
parts=" ${PARTS:-warm shared} "
alone=""; [[ "${ALONE:-0}" == 1 ]] && alone="--alone"
part warm 120 python3 -m judge submit 94 reference/094-softmax.py --device cuda --sandbox bwrap --json
part shared "${SHARED_LIMIT:-400}" python3 tests/bench/concurrent_submits.py ${IDS:-93 94 94 95 95 96 97 98} \
  --device cuda --sandbox bwrap --reports "$out/reports" $alone
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "$out" . 2>/dev/null
cat "$out/env.txt"
