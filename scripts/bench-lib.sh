# bench-lib.sh - what every testbed bench shares, sourced by
# bench-testbed.sh (the head-to-head and the fleet-size section),
# bench-keeper.sh and bench-hostproc.sh: a work dir with its own copy of the
# binary, the machine-wide lock and a booted testbed, the workstation's
# environment, parallel ssh, the keepers' stop, the clean-up on exit and
# the timing helpers (timed, report, fmt, ratio).
#
# The caller sets BENCH_NAME (messages, work dir), runs from the repository
# root with `set -euo pipefail`, sources this file, then calls bench_up N.
# A caller that starts something else defines bench_cleanup_extra, which
# the clean-up runs first. On exit the clean-up stops the keepers the
# bench's stado runs started, brings the testbed down and removes the work
# dir unless BENCH_KEEP=1 or the run failed.
#
# Environment: STADO_BIN (default bin/stado), TESTBED_LOCK, TESTBED_LOCK_HELD
# (1: the caller holds the lock), BENCH_KEEP.
ROOT=$PWD
BIN=${STADO_BIN:-$ROOT/bin/stado}
TB=$ROOT/tests/testbed/testbed.sh
LOCK=${TESTBED_LOCK:-/run/stado-testbed.lock}

die() { echo "$BENCH_NAME: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "the testbed needs root (namespaces, systemd as PID 1)"
[ -x "$BIN" ] || die "no stado binary at $BIN (make build)"

W=$(mktemp -d "/tmp/stado-$BENCH_NAME.XXXXXX")
LOGS=$W/logs
mkdir -p "$LOGS" "$W/cold"
# A copy of the binary: a `make build` by someone else during the run must
# not change what is measured. The hosts get their own copy at `up`.
cp "$BIN" "$W/stado"
BIN=$W/stado
# stado's keeper socket lives under $XDG_RUNTIME_DIR when set, else under
# $HOME; every stado run here gets its HOME from the bench.
unset XDG_RUNTIME_DIR STADO_KEEPER_SOCKET

# stop_keepers DIR: stop every stado keeper listening on a socket under DIR
# (all of them were started by the bench's stado runs), by the pid that
# holds the socket. A keeper binds a temporary name in its socket's
# directory and renames it; ss shows the bound name, so the directory is
# matched.
stop_keepers() {
  local sock pid
  while IFS= read -r sock; do
    for pid in $(ss -xlpH 2>/dev/null | awk -v d="$(dirname "$sock")/" 'index($5, d) == 1' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$BIN")" ] || continue
      stop_pid "$pid"
    done
  done < <(find "$1" -type s -name 'keeper*.sock' 2>/dev/null)
}

# stop_pid PID: TERM, up to 5 s, then KILL (a process the bench started).
stop_pid() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}

bench_cleanup() {
  local rc=$?
  set +e
  if declare -F bench_cleanup_extra >/dev/null; then bench_cleanup_extra; fi
  stop_keepers "$W"
  [ -z "${TB_UP:-}" ] || bash "$TB" down >/dev/null 2>&1
  exec 9>&-
  if [ "${BENCH_KEEP:-}" = 1 ] || [ $rc != 0 ]; then
    echo "$BENCH_NAME: work dir (logs) kept in $W" >&2
  else
    rm -rf "$W"
  fi
  exit $rc
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

addr() { echo "127.0.1.$1"; }

# bench_up N: the machine-wide lock (waiting up to 15 min for another
# testbed), N hosts booted (BOOT_S: how long it took), the testbed's
# environment, and the workstation's: the testbed's key and known_hosts, no
# ssh_config (registries name the addresses), the shared file store, no
# keeper unless a run allows one.
bench_up() {
  local n=$1 t0
  exec 9>>"$LOCK"
  if [ "${TESTBED_LOCK_HELD:-}" != 1 ] && ! flock -n 9; then
    echo "$BENCH_NAME: someone else's testbed holds $LOCK; waiting for it (up to 15 min)" >&2
    flock -w 900 9 || die "the testbed lock stayed taken"
  fi
  export TESTBED_LOCK_HELD=1
  bash "$TB" down >/dev/null 2>&1 || true
  t0=$(date +%s%N)
  TB_UP=1
  STADO_BIN=$BIN bash "$TB" up "$n" 2>"$LOGS/testbed-up.log" 9>&- \
    || { cat "$LOGS/testbed-up.log" >&2; die "testbed up $n failed"; }
  eval "$(bash "$TB" env)"
  BOOT_S=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')
  echo "$BENCH_NAME: $n testbed hosts up in ${BOOT_S} s" >&2

  export HOME=$W/workstation
  mkdir -p "$HOME"
  export STADO_STORE=file://$TESTBED_STORE
  export STADO_KNOWN_HOSTS=$TESTBED_KNOWN_HOSTS
  export STADO_SSH_IDENTITY=$TESTBED_SSH_KEY
  export STADO_SSH_CONFIG=/dev/null
  export STADO_WRITER=bench
  export STADO_NO_KEEPER=1 STADO_KEEPER=off
  # OpenSSH as an operator would run it against the testbed: strict host
  # keys, the testbed's key only, a new connection every time.
  SSH=(ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes
    -o UserKnownHostsFile="$TESTBED_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null
    -i "$TESTBED_SSH_KEY" -o IdentitiesOnly=yes -o ControlMaster=no -o ControlPath=none
    -o LogLevel=ERROR -l root)
}

# store_url_on_hosts N: each host's stado reads the store URL from
# ~/.stado/store-url, written through nsenter (no ssh connection is made
# before the measurements but the set-up's).
store_url_on_hosts() {
  local k
  for k in $(seq 1 "$1"); do
    bash "$TB" exec "host$k" sh -c "mkdir -p /root/.stado && printf '%s\n' '$STADO_STORE' > /root/.stado/store-url"
  done
}

# pssh CMD: CMD on hosts 1..N at once, a new connection each (SSH is set
# by bench_up).
pssh() {
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do
    "${SSH[@]}" "$(addr "$k")" "$@" </dev/null & pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}

# --- timing -------------------------------------------------------------------
# The tools' runs are interleaved (run 1 of each tool, then run 2, ...) so
# that a change in the machine's load (other people's builds) falls on all
# of them alike.
declare -A TIMES MED FAILED
# timed KEY BEFORE AFTER CMD...: one run of CMD; its wall time in ms is
# appended to TIMES[KEY]. BEFORE and AFTER (function names, or -) run
# untimed around it. Output goes to logs/KEY.log. A key that failed once is
# not run again.
timed() {
  local key=$1 before=$2 after=$3; shift 3
  local t0 t1 rc log=$LOGS/$key.log
  [ -z "${FAILED[$key]:-}" ] || return 0
  [ "$before" = - ] || $before
  echo "--- $(date +%T) $*" >> "$log"
  t0=$(date +%s%N)
  set +e; "$@" >> "$log" 2>&1; rc=$?; set -e
  t1=$(date +%s%N)
  [ "$after" = - ] || $after
  if [ $rc != 0 ]; then
    FAILED[$key]="exit $rc"
    return 0
  fi
  TIMES[$key]="${TIMES[$key]:-}$(( (t1 - t0) / 1000000 )) "
}
# report KEY LABEL: the median of KEY's runs into MED[KEY], and one line.
report() {
  local key=$1 label=$2
  if [ -n "${FAILED[$key]:-}" ]; then
    MED[$key]=fail
    printf '  %-52s FAILED (%s); the end of its log:\n' "$label" "${FAILED[$key]}"
    tail -n 8 "$LOGS/$key.log" | sed 's/^/      /'
    return 0
  fi
  MED[$key]=$(printf '%s\n' ${TIMES[$key]} | sort -n | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m/1000}')
  printf '  %-52s %6.2f s   runs (ms): %s\n' "$label" "${MED[$key]}" "${TIMES[$key]}"
}
fmt() { case "${MED[$1]:-n/a}" in fail|n/a) echo "${MED[$1]:-n/a}" ;; *) printf '%.2f s' "${MED[$1]}" ;; esac; }
ratio() { # KEY-A KEY-B: A's median over B's
  local a=${MED[$1]:-n/a} b=${MED[$2]:-n/a}
  case "$a$b" in *fail*|*n/a*) echo "—"; return ;; esac
  awk -v a="$a" -v b="$b" 'BEGIN{ if (b <= 0) print "—"; else printf "%.2f×", a/b }'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
