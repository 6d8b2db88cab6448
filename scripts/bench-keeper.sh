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
BENCH_NAME=bench-keeper
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
N=${BENCH_HOSTS:-20}
RUNS=${BENCH_RUNS:-5}
[ "$N" -ge 1 ] && [ "$N" -le 250 ] || die "BENCH_HOSTS must be 1..250"

bench_up "$N"
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
store_url_on_hosts "$N"
"$BIN" registry push "$W/fleet.yaml" --reason "bench fleet" >"$LOGS/setup.log" 2>&1 9>&- \
  || { cat "$LOGS/setup.log" >&2; die "registry push failed"; }

# stado MODE ARGS: cold: --no-keeper, a HOME no other run used; first: the
# keeper allowed, none running (it was stopped), the one keeper HOME; next:
# the same HOME right after.
COLD=0
stado() {
  local mode=$1; shift
  case $mode in
    cold) COLD=$((COLD + 1)); mkdir -p "$W/cold/$COLD"; HOME=$W/cold/$COLD "$BIN" "$@" 9>&- ;;
    *) mkdir -p "$W/keeper"; HOME=$W/keeper env -u STADO_NO_KEEPER -u STADO_KEEPER "$BIN" "$@" 9>&- ;;
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

ensure cold >"$LOGS/prime.log" 2>&1 || { cat "$LOGS/prime.log" >&2; die "the priming ensure failed"; }
echo
echo "measuring on $N hosts, runs interleaved (load average at start: $(cut -d' ' -f1-3 /proc/loadavg)):"
for i in $(seq 1 "$RUNS"); do
  timed ssh.true - - pssh true
  timed ssh.stado - - pssh /usr/local/bin/stado version
  timed conv.cold stop_keeper - ensure cold
  timed deploy.cold remove_new - ensure cold
  timed conv.first stop_keeper - ensure first
  timed conv.next - - ensure next
  timed conv.first stop_keeper - ensure first
  timed conv.later pause - ensure later
  for p in ${BENCH_PARALLEL:-}; do
    timed "deploy.p$p" remove_new - ensure cold --parallel "$p"
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
