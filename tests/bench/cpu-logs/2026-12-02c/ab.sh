# ab.sh VAR ROUNDS IDS : VAR=0/1 alternating
V=$1; R=$2; shift 2
for r in $(seq $R); do for x in 0 1; do [ $((r%2)) = 0 ] && x=$((1-x)); for id in "$@"; do f=$(ls /work/main/reference/0$id-*.py)
 ( cd /work/main && env CI=true $V=$x /usr/bin/time -f "r$r $id $V=$x wall %e cpu %U+%S" .venv/bin/python -m judge submit $id $f --sandbox process --seed 1 --json >/tmp/ab.json 2>/tmp/ab.err; tail -1 /tmp/ab.err; python3 -c "
import json; t=json.load(open('/tmp/ab.json'))['timing']; print('   tests', t['tests_seconds'], 'replay_start_wait', t.get('replay_start_wait_seconds'), 'start_wait', t['start_wait_seconds'])" ); done; done; done
