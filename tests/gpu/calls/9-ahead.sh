#!/usr/bin/env bash
# Device call 1 of 2026-12-05 (built by the fourth session of 2026-12-04; logs in 9edee07:tests/gpu/logs/2026-12-05/call1): issue 13's `submit`
# latency with the speed run's warm-up checked ahead (a warm-up call of each bench shape checked and replayed
# beside the tests, so that the replay worker has compiled the bench shapes' kernels before the checks after the
# rounds) and a lone submit's speed workers started with its session.
# Each part under its own limit, the whole under DEADLINE (540 s); PARTS picks and orders them (default
# "profiler latency"):
#   profiler  tests/gpu/probes/profiler_start.py: the profiler's start and stop, first and later (about 15 s)
#   latency   judge_latency.py IDS (default "94 98 97 95 93 96") --warm --fresh, speed on, bwrap, the defaults:
#             issue 13's Done-when figures, from files no kernel cache has seen
#   workers98 judge_latency.py 98 --fresh --ab JUDGE_WORKERS=8,14 --rounds 1: 98's tests are its compiles (238 s
#             summed over 8 workers in 2026-12-04c call 2, one variant or two per case), 8 workers on 16 cores
# Reports under results/reports (BENCH_REPORTS); all packed into $OUT/results.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-gpu-out}/results"; mkdir -p "$out"
export PYTHONUNBUFFERED=1 BENCH_REPORTS="$out/reports" PART_TAIL=14
source tests/gpu/calls/lib.sh
write_env
lat="python3 tests/bench/judge_latency.py --device cuda --sandbox bwrap"  # (timeout runs programs, not functions)
for p in ${PARTS:-profiler latency}; do
  case $p in
    profiler) part profiler 30 python3 tests/gpu/probes/profiler_start.py ;;
    latency) part latency 330 $lat ${IDS:-94 98 97 95 93 96} --warm --fresh ;;
    workers98) part workers98 160 $lat 98 --fresh --ab JUDGE_WORKERS=8,14 --rounds 1 ;;
  esac
done
echo "done at $(( $(date +%s) - start )) s"
tar -czf "${OUT:-gpu-out}/results.tar.gz" -C "${OUT:-gpu-out}" results && rm -rf "$out"
