# prof3.sh ID FILE DIR : py-spy the judge, its worker and its replay worker (raw, 100 Hz)
mkdir -p $3
(CI=true /work/main/.venv/bin/py-spy record -r 100 -f raw -o $3/judge.txt -- /work/main/.venv/bin/python -m judge submit $1 $2 --sandbox process --seed 1 --json >/dev/null 2>&1 &)
for i in $(seq 200); do w=$(pgrep -f "judge.untrusted$" | head -1); r=$(pgrep -f "judge.untrusted.replay$" | head -1); [ -n "$w" ] && [ -n "$r" ] && break; sleep 0.02; done
/work/main/.venv/bin/py-spy record -r 100 -f raw -o $3/worker.txt --pid $w >/dev/null 2>&1 &
/work/main/.venv/bin/py-spy record -r 100 -f raw -o $3/replay.txt --pid $r >/dev/null 2>&1 &
wait
sleep 1
