#!/bin/bash
# usage: run.sh NAME FILE [extra env assignments...]
name=$1; file=$2; shift 2
cd /work/main
/tmp/rt8/monitor.sh /tmp/rt8/$name.mon & mon=$!
start=$(date +%s.%N)
env "$@" JUDGE_WORKERS=${JW:-3} timeout 300 .venv/bin/python -m judge submit 94 $file --sandbox bwrap --seed 1 --json $EXTRA > /tmp/rt8/$name.json 2> /tmp/rt8/$name.err
rc=$?
end=$(date +%s.%N)
sleep 1
kill $mon
echo "rc=$rc wall=$(echo "$end - $start" | bc)" | tee /tmp/rt8/$name.rc
/work/main/.venv/bin/python - /tmp/rt8/$name.json <<'PY'
import json,sys
try:
    d=json.load(open(sys.argv[1]))
except Exception as e:
    print("no json", e); sys.exit()
def find(d,keys):
    out={}
    for k in keys:
        if k in d: out[k]=d[k]
    return out
print({k:d.get(k) for k in ("verdict","score","message")})
for g in d.get("groups",[]) or []:
    print("  ", g.get("name"), g.get("verdict"), (g.get("message") or "")[:200])
PY
echo "--- after:"; ps -eo pid,ppid,user,stat,etime,cmd | grep -v "\[" | grep -v -E "binary_backend|bash /dev/fd/3|ps -eo|grep|dockerd|containerd|process_api|sleep 90" | head; ls /sys/fs/cgroup/pids | grep triton
