#!/usr/bin/env bash
# Device calls of 2026-12-02 (fifth session, logs in 9edee07:tests/gpu/logs/2026-12-02e/): what the fused attention
# inputs and leaving the PyTorch baseline out of judged submissions save `submit` on the H200 (issue 13), each
# part under its own limit, the whole under DEADLINE seconds; every full report kept (BENCH_REPORTS), all of it
# packed into $OUT/results.tar.gz.
#   attention.txt   tests/gpu/probes/attention_inputs.py: 98's bench inputs o and lse, fused against plain
#   forward.txt     tests/gpu/probes/forward_inputs.py: 98's case inputs, float64 forward on the GPU against the CPU
#   warm.txt        judge_latency.py over WARM_IDS (default "94 98") with this tree: not counted (the first
#                   submit of a problem on a fresh machine compiles its kernels and measures the GPU's ceilings)
#   latency_ab.txt  judge_latency.py --trees out/base . over AB_IDS (default "94 98"), AB_ROUNDS (default 2)
#                   rounds, order swapped each round; out/base is the tree before this session's change (carried)
#   latency.txt     judge_latency.py over IDS (default "93 95 96 97"), this tree (LATENCY_LIMIT s)
# PARTS picks and orders them (default "attention warm latency_ab").
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=14
source tests/gpu/calls/lib.sh
{ date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; bwrap --version; } > "$out/env.txt" 2>&1
for p in ${PARTS:-attention warm latency_ab}; do
  case $p in
    forward) part forward "${FORWARD_LIMIT:-120}" python3 tests/gpu/probes/forward_inputs.py ;;
    attention) part attention "${ATTENTION_LIMIT:-90}" python3 tests/gpu/probes/attention_inputs.py ;;
    warm) part warm "${WARM_LIMIT:-200}" python3 tests/bench/judge_latency.py ${WARM_IDS:-94 98} --device cuda --sandbox bwrap ;;
    latency_ab) part latency_ab "${AB_LIMIT:-400}" python3 tests/bench/judge_latency.py ${AB_IDS:-94 98} --device cuda \
                  --sandbox bwrap --trees out/base . --rounds "${AB_ROUNDS:-2}" ;;
    latency) part latency "${LATENCY_LIMIT:-300}" python3 tests/bench/judge_latency.py ${IDS:-93 95 96 97} --device cuda --sandbox bwrap ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
