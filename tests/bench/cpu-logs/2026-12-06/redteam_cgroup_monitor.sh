#!/bin/bash
out=$1; : > $out
while true; do
  echo "== $(date +%T.%N | cut -c1-12)" >> $out
  for d in /sys/fs/cgroup/pids/triton-judge-*; do [ -d "$d" ] || continue; echo "$d cur=$(cat $d/pids.current) max=$(cat $d/pids.max)" >> $out; for s in $d/*/; do [ -d "$s" ] && echo "  $s cur=$(cat $s/pids.current) max=$(cat $s/pids.max)" >> $out; done; done
  for d in /sys/fs/cgroup/memory/triton-judge-*; do [ -d "$d" ] || continue; echo "$d mem=$(( $(cat $d/memory.usage_in_bytes)/1048576 ))M lim=$(( $(cat $d/memory.limit_in_bytes)/1048576 ))M" >> $out; for s in $d/*/; do [ -d "$s" ] && echo "  $s mem=$(( $(cat $s/memory.usage_in_bytes)/1048576 ))M lim=$(( $(cat $s/memory.limit_in_bytes)/1048576 ))M" >> $out; done; done
  echo "nprocs_total=$(ls /proc | grep -c '^[0-9]')" >> $out
  sleep 1
done
