# Shared by the device call scripts (sourced, from the repository root): bubblewrap from the carried .deb
# (tests/gpu/fetch-bwrap.sh), the call's deadline, and part, which runs one part of a call under its own
# limit, never past the deadline.
#   out       where the parts write (NAME.txt each); set before sourcing
#   DEADLINE  seconds for the whole call (default: $default_deadline, else 540)
#   parts     when set (" a b c "), part runs only the parts named in it
# and write_env, which writes the machine and versions into $out/env.txt.
if ! command -v bwrap >/dev/null && ls .deb/bubblewrap_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/bwrap-root && dpkg -x .deb/bubblewrap_*.deb /tmp/bwrap-root
  export PATH="/tmp/bwrap-root/usr/bin:$PATH"
fi
deadline=${DEADLINE:-${default_deadline:-540}}
start=$(date +%s)
left() { echo $(( deadline - ($(date +%s) - start) )); }
part() {  # part NAME SECONDS CMD...
  local name=$1 limit=$2; shift 2
  [[ -z "${parts:-}" || $parts == *" $name "* ]] || return 0
  local l; l=$(left)
  (( l < 30 )) && { echo "== $name: skipped, $l s left" | tee "$out/$name.txt"; return; }  # (timeout 0: no limit)
  (( limit > l )) && limit=$l
  echo "== $name (at most ${limit} s)"
  timeout -k 10 "$limit" "$@" > "$out/$name.txt" 2>&1
  echo "   exit $? after $(( $(date +%s) - start )) s total"
  tail -n "${PART_TAIL:-30}" "$out/$name.txt"
}
write_env() {  # the call's machine and versions, into $out/env.txt
  { date -u +"%Y-%m-%dT%H:%M:%SZ"; nproc; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader;
    bwrap --version; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } \
    > "$out/env.txt" 2>&1
}
