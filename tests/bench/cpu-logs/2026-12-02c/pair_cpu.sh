R=$1; shift
for r in $(seq $R); do
  if [ $((r % 2)) = 1 ]; then order="before main"; else order="main before"; fi
  for t in $order; do
    root=/tmp/$t; [ $t = main ] && root=/work/main
    for id in "$@"; do
      f=$(ls $root/reference/0$id-*.py)
      ( cd $root && CI=true /usr/bin/time -f "$t r$r $id wall %e user %U sys %S" /work/main/.venv/bin/python -m judge submit $id $f --sandbox process --seed 1 --json >/dev/null 2>/tmp/cpu.err; tail -1 /tmp/cpu.err )
    done
  done
done
