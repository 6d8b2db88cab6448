#!/usr/bin/env bash
# bench-keeper.sh - the cold-call budgets of issue 27 on one testbed of N
# hosts (default 20), in one run, the runs interleaved:
#
#   1. where a cold deploy's time goes: one new connection per host running
#      `true` (parallel OpenSSH), the same running the host's stado
#      (`stado version`: the remote program's start), stado's cold
#      converged ensure (dial, the channel call, nothing to do) and stado's
#      cold deploy of a new unit (the unit written, systemd reloaded, the
#      unit started, settled 1 s, confirmed). The differences between rows
#      are the phases; the budget is deploy ≤ the parallel-ssh command.
#   2. the first command after the keeper's idle exit: a converged ensure
#      with no keeper running but allowed (it dials directly, starts a
#      keeper behind it and hands it its hosts), beside the same command
#      cold (--no-keeper, a fresh HOME), and the command after it (the
#      keeper holding the connections), right after (while the keeper
#      still dials the hosts handed to it) and BENCH_PAUSE s after. The
#      budget is first ≤ 1.1× cold. The keeper is stopped before each
#      first command, as its idle exit would; each round has two.
#
# It prints medians and ratios and asserts nothing.
#
# Usage (root; `make bench` runs it after `make deps build`):
#   scripts/bench-keeper.sh
#
# Environment:
#   BENCH_HOSTS=20     testbed hosts (and the ssh fan-out)
#   BENCH_RUNS=5       timed runs of each measurement
#   STADO_BIN          the stado binary under test (default bin/stado)
#   BENCH_PAUSE=5      seconds between a first command and the "later" one
#   BENCH_PARALLEL     --parallel values for extra cold deploy rows, e.g.
#                      "4 32" (default none: the default only)
#
# It holds the testbed's machine-wide lock (TESTBED_LOCK) from `up` to
# `down`, and stops the keepers its stado runs started (by the pid holding
# their socket) on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${STADO_BIN:-$ROOT/bin/stado}
TB=$ROOT/tests/testbed/testbed.sh
N=${BENCH_HOSTS:-20}
RUNS=${BENCH_RUNS:-5}
LOCK=${TESTBED_LOCK:-/run/stado-testbed.lock}

die() { echo "bench-keeper: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "the testbed needs root (namespaces, systemd as PID 1)"
[ -x "$BIN" ] || die "no stado binary at $BIN (make build)"
[ "$N" -ge 1 ] && [ "$N" -le 250 ] || die "BENCH_HOSTS must be 1..250"

W=$(mktemp -d /tmp/stado-bench-keeper.XXXXXX)
LOGS=$W/logs
mkdir -p "$LOGS" "$W/cold"
cp "$BIN" "$W/stado"
BIN=$W/stado
unset XDG_RUNTIME_DIR STADO_KEEPER_SOCKET

# stop_keepers DIR: stop every stado keeper listening on a socket under DIR,
# by the pid that holds the socket (the ones this script's runs started). A
# keeper binds a temporary name in its socket's directory and renames it,
# and ss shows the bound name: the directory is what is matched.
stop_keepers() {
  local sock pid
  while IFS= read -r sock; do
    for pid in $(ss -xlpH 2>/dev/null | awk -v d="$(dirname "$sock")/" 'index($5, d) == 1' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$BIN")" ] || continue
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    done
  done < <(find "$1" -type s -name 'keeper*.sock' 2>/dev/null)
}

cleanup() {
  local rc=$?
  set +e
  stop_keepers "$W"
  [ -z "${TB_UP:-}" ] || bash "$TB" down >/dev/null 2>&1
  exec 9>&-
  if [ "${BENCH_KEEP:-}" = 1 ] || [ $rc != 0 ]; then
    echo "bench-keeper: work dir (logs) kept in $W" >&2
  else
    rm -rf "$W"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

exec 9>"$LOCK"
if ! flock -n 9; then
  echo "bench-keeper: someone else's testbed holds $LOCK; waiting for it (up to 15 min)" >&2
  flock -w 900 9 || die "the testbed lock stayed taken"
fi
export TESTBED_LOCK_HELD=1
bash "$TB" down >/dev/null 2>&1 || true
t0=$(date +%s%N)
TB_UP=1
STADO_BIN=$BIN bash "$TB" up "$N" 2>"$LOGS/testbed-up.log" 9>&- \
  || { cat "$LOGS/testbed-up.log" >&2; die "testbed up $N failed"; }
eval "$(bash "$TB" env)"
echo "bench-keeper: $N testbed hosts up in $(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}') s" >&2

export HOME=$W/workstation
mkdir -p "$HOME"
export STADO_STORE=file://$TESTBED_STORE
export STADO_KNOWN_HOSTS=$TESTBED_KNOWN_HOSTS
export STADO_SSH_IDENTITY=$TESTBED_SSH_KEY
export STADO_SSH_CONFIG=/dev/null
export STADO_WRITER=bench
export STADO_NO_KEEPER=1
addr() { echo "127.0.1.$1"; }
UNIT_PATH=/etc/systemd/system/bench-new.service

{
  echo "# written by scripts/bench-keeper.sh"
  echo "version: 1"
  echo "targets:"
  for k in $(seq 1 "$N"); do
    cat <<EOF
  - name: host$k
    ssh: {address: $(addr "$k"), port: 22, user: root}
    os: linux
    services:
      - name: bench-new
        unit: bench-new.service
        program: /bin/sleep
        args: [infinity]
EOF
  done
} > "$W/fleet.yaml"
for k in $(seq 1 "$N"); do
  bash "$TB" exec "host$k" sh -c "mkdir -p /root/.stado && printf '%s\n' '$STADO_STORE' > /root/.stado/store-url"
done
"$BIN" registry push "$W/fleet.yaml" --reason "bench fleet" >"$LOGS/setup.log" 2>&1 9>&- \
  || { cat "$LOGS/setup.log" >&2; die "registry push failed"; }

SSH=(ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes
  -o UserKnownHostsFile="$TESTBED_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null
  -i "$TESTBED_SSH_KEY" -o IdentitiesOnly=yes -o ControlMaster=no -o ControlPath=none
  -o LogLevel=ERROR -l root)
pssh() { # CMD: CMD on every host at once, a new connection each
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do
    "${SSH[@]}" "$(addr "$k")" "$@" </dev/null & pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}
# stado MODE ARGS: cold: --no-keeper, a HOME no other run used; first: the
# keeper allowed, none running (it was stopped), the one keeper HOME; next:
# the same HOME right after.
COLD=0
stado() {
  local mode=$1; shift
  case $mode in
    cold) COLD=$((COLD + 1)); mkdir -p "$W/cold/$COLD"; HOME=$W/cold/$COLD "$BIN" "$@" 9>&- ;;
    *) mkdir -p "$W/keeper"; HOME=$W/keeper env -u STADO_NO_KEEPER "$BIN" "$@" 9>&- ;;
  esac
}
ensure() { local m=$1; shift; stado "$m" service ensure bench-new --all --settle 1s --reason bench "$@"; }
remove_new() {
  local pids=() k
  for k in $(seq 1 "$N"); do
    bash "$TB" exec "host$k" sh -c "systemctl stop bench-new.service; rm -f $UNIT_PATH; systemctl daemon-reload; systemctl reset-failed bench-new.service; true" \
      >/dev/null 2>&1 & pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || true; done
}
# stop_keeper: the keeper gone, as after its idle exit, and the hosts given
# a moment to close the sessions it held (an idle exit closes them long
# before the next command, not while it dials)
stop_keeper() { stop_keepers "$W/keeper"; sleep 2; }
pause() { sleep "${BENCH_PAUSE:-5}"; }

declare -A TIMES MED FAILED
timed() { # KEY BEFORE CMD...: one run's wall ms appended to TIMES[KEY]
  local key=$1 before=$2; shift 2
  local t0 t1 rc log=$LOGS/$key.log
  [ -z "${FAILED[$key]:-}" ] || return 0
  [ "$before" = - ] || $before
  echo "--- $(date +%T) $*" >> "$log"
  t0=$(date +%s%N)
  set +e; "$@" >> "$log" 2>&1; rc=$?; set -e
  t1=$(date +%s%N)
  if [ $rc != 0 ]; then FAILED[$key]="exit $rc"; return 0; fi
  TIMES[$key]="${TIMES[$key]:-}$(( (t1 - t0) / 1000000 )) "
}
report() { # KEY LABEL
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
ratio() { # A B: A's median over B's
  local a=${MED[$1]:-n/a} b=${MED[$2]:-n/a}
  case "$a$b" in *fail*|*n/a*) echo "—"; return ;; esac
  awk -v a="$a" -v b="$b" 'BEGIN{ if (b <= 0) print "—"; else printf "%.2f×", a/b }'
}

ensure cold >"$LOGS/prime.log" 2>&1 || { cat "$LOGS/prime.log" >&2; die "the priming ensure failed"; }
echo
echo "measuring on $N hosts, runs interleaved (load average at start: $(cut -d' ' -f1-3 /proc/loadavg)):"
for i in $(seq 1 "$RUNS"); do
  timed ssh.true - pssh true
  timed ssh.stado - pssh /usr/local/bin/stado version
  timed conv.cold stop_keeper ensure cold
  timed deploy.cold remove_new ensure cold
  timed conv.first stop_keeper ensure first
  timed conv.next - ensure next
  timed conv.first stop_keeper ensure first
  timed conv.later pause ensure later
  for p in ${BENCH_PARALLEL:-}; do
    timed "deploy.p$p" remove_new ensure cold --parallel "$p"
  done
done
stop_keeper
echo "1. where a cold deploy's time goes (each row adds a phase):"
report ssh.true "parallel ssh: a new connection, true"
report ssh.stado "parallel ssh: a new connection, stado version"
report conv.cold "stado cold converged ensure (--no-keeper)"
report deploy.cold "stado cold deploy, --settle 1s (--no-keeper)"
for p in ${BENCH_PARALLEL:-}; do report "deploy.p$p" "stado cold deploy, --parallel $p"; done
echo "   budget: cold deploy / parallel-ssh command = $(ratio deploy.cold ssh.true) (≤ 1.00×)"
echo "2. the first command after the keeper's idle exit:"
report conv.first "first: no keeper running, keeper allowed"
report conv.next "next: the keeper it left, right after"
report conv.later "later: the keeper it left, ${BENCH_PAUSE:-5} s after"
echo "   budget: first / cold = $(ratio conv.first conv.cold) (≤ 1.10×); next / cold = $(ratio conv.next conv.cold); later / cold = $(ratio conv.later conv.cold)"
