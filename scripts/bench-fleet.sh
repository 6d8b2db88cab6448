#!/usr/bin/env bash
# bench-fleet.sh - make bench's fleet-size section (issue 27): stado beside
# parallel OpenSSH and Ansible (tuned: pipelining, ControlPersist, forks 50)
# on a testbed of 100 simulated hosts by default, the tools' runs
# interleaved, every figure a whole process per run (median of the runs).
# It prints the testbed's boot time, one table with the budgets beside the
# figures, and the host process's memory and CPU per pass. It asserts
# nothing. docs/bench.md ("The fleet-size section") says what each row is.
#
# Usage (root; `make bench` runs it after the head-to-head):
#   scripts/bench-fleet.sh
#
# Environment:
#   BENCH_FLEET_HOSTS=100   testbed hosts (1..250)
#   BENCH_FLEET_FORKS=50    Ansible's forks
#   BENCH_FLEET_RUNS=3      timed runs of each row
#   BENCH_FLEET_ANSIBLE=1   0 leaves Ansible's rows out (n/a), which halves the run
#   STADO_BIN, BENCH_KEEP, TESTBED_LOCK as for bench-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=bench-fleet
export BENCH_HOSTS=${BENCH_FLEET_HOSTS:-100}
export BENCH_FORKS=${BENCH_FLEET_FORKS:-50}
export BENCH_RUNS=${BENCH_FLEET_RUNS:-3}
export BENCH_RUNS_CHEAP=$BENCH_RUNS
# shellcheck source=scripts/bench-testbed.sh
source scripts/bench-testbed.sh
# ans_row: one of Ansible's timed runs, unless BENCH_FLEET_ANSIBLE=0
ANS_ON=${BENCH_FLEET_ANSIBLE:-1}
ans_row() { [ "$ANS_ON" = 0 ] || timed "$@"; }

T0=$(date +%s%N)
LOAD0=$(loadavg)
echo
echo "fleet size: measuring on $N hosts (booted in ${BOOT_S} s), the tools' runs interleaved (load average at start: $LOAD0):"

# deploy as one ssh command per host: the unit's bytes on stdin, then
# daemon-reload and start in the same session (the budget of a cold deploy).
ssh_deploy1_host() {
  "${SSH[@]}" "$(addr "$1")" "cat > $UNIT_PATH && systemctl daemon-reload && systemctl start bench-new.service" \
    < "$W/units/host$1/bench-new.service"
}
ssh_deploy1_all() {
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do ssh_deploy1_host "$k" & pids+=($!); done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}
ssh_restart_all() { pssh systemctl restart demo.service; }
ans_restart_all() { ans "$1" ansible bench -o -m ansible.builtin.systemd -a "name=demo.service state=restarted"; }
stado_restart_all() { stado "$1" service restart demo; }
stado_verify_all() { stado "$1" service verify; }
stado_cycle_report() { stado "$1" optimize run --mode report; }
# first: a HOME whose keeper is not running (as after its idle exit), the
# keeper allowed; what the command started is stopped after the run.
FIRST=0
stado_first() {
  FIRST=$((FIRST + 1)); mkdir -p "$W/first/$FIRST"
  HOME=$W/first/$FIRST env -u STADO_NO_KEEPER -u STADO_KEEPER "$BIN" "$@" 9>&-
}
after_first() { stop_keepers "$W/first"; }

# 1. read one unit's state on every host
[ "$ANS_ON" = 0 ] || ans_read_all tuned >"$LOGS/prime-read-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS"); do
  timed f.read.stado - - stado_read_all cold
  timed f.read.ssh - - ssh_read_all
  ans_row f.read.anst - - ans_read_all tuned
done

# 2. deploy a new unit on every host, then the same again (converged)
remove_new
[ "$ANS_ON" = 0 ] || ans_deploy_all tuned >"$LOGS/prime-deploy-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS"); do
  timed f.deploy.stado remove_new after_cold stado_ensure_all cold
  timed f.conv.stado - after_cold stado_ensure_all cold
  timed f.conv.first - after_first stado_first service ensure bench-new --all --settle 1s --reason bench
  timed f.deploy.ssh remove_new - ssh_deploy1_all
  timed f.conv.ssh - - ssh_read_all
  ans_row f.deploy.anst remove_new - ans_deploy_all tuned
  ans_row f.conv.anst - - ans_deploy_all tuned
done

# 3. warm: the keeper of one HOME holds a connection to every host. It is
# started here with an idle period longer than the slowest row between two
# warm runs (a keeper a command starts exits after a minute unused, and an
# Ansible run at 100 hosts takes longer than that).
mkdir -p "$W/warm"
HOME=$W/warm setsid env -u STADO_NO_KEEPER -u STADO_KEEPER "$BIN" host keeper --idle 2h </dev/null >"$LOGS/keeper.log" 2>&1 9>&- &
KEEPER_PID=$!
stado_ensure_all warm >"$LOGS/prime-warm-ensure.log" 2>&1 || true
find "$W/warm" -type s -name 'keeper*.sock' | grep -q . \
  || echo "  warm: no keeper socket under $W/warm after the priming run; the warm runs may be cold"
[ "$ANS_ON" = 0 ] || ans_restart_all tuned >"$LOGS/prime-restart-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS"); do
  timed f.conv.warm - - stado_ensure_all warm
  timed f.restart.warm - - stado_restart_all warm
  timed f.restart.ssh - - ssh_restart_all
  ans_row f.restart.anst - - ans_restart_all tuned
done

# 4. verify and the autonomy cycle's report, cold and warm
for i in $(seq 1 "$RUNS"); do
  timed f.verify.stado - after_cold stado_verify_all cold
  timed f.verify.warm - - stado_verify_all warm
  timed f.report.stado - after_cold stado_cycle_report cold
  timed f.report.warm - - stado_cycle_report warm
done

# 5. the host process (`stado host run`, STADO_INTERVAL 30s, 3 services):
# RSS and CPU time of its main process on up to 10 hosts, CPU over a window
# of two passes.
HP_HOSTS=$(( N < 10 ? N : 10 ))
hostproc() { # K: "rss_kb ticks" of host K's stado.service main process
  bash "$TB" exec "host$1" sh -c 'p=$(systemctl show -p MainPID --value stado.service); [ "$p" -gt 0 ] || exit 1
    r=$(awk "/^VmRSS:/ {print \$2}" /proc/$p/status); set -- $(cut -d" " -f14,15 /proc/$p/stat); echo "$r $(( $1 + $2 ))"' 2>/dev/null
}
declare -A HP0
for k in $(seq 1 "$HP_HOSTS"); do HP0[$k]=$(hostproc "$k" || echo "- -"); done
HP_WIN=60
sleep "$HP_WIN"
HZ=$(getconf CLK_TCK)
HP_LINES=$(for k in $(seq 1 "$HP_HOSTS"); do
  read -r _ t0 <<< "${HP0[$k]}"; read -r rss t1 <<< "$(hostproc "$k" || echo "- -")"
  [ "$t0" != - ] && [ "$t1" != - ] || continue
  echo "$rss $(( t1 - t0 ))"
done)
HP_SUMMARY=$(sort -n <<< "$HP_LINES" | awk -v hz="$HZ" -v win="$HP_WIN" '
  NF == 2 { n++; rss[n] = $1; cpu += $2 }
  END {
    if (n == 0) { print "n/a (no host process read)"; exit }
    m = (n % 2) ? rss[(n + 1) / 2] : (rss[n / 2] + rss[n / 2 + 1]) / 2
    passes = win / 30
    printf "RSS median %.1f MB (min %.1f, max %.1f) over %d hosts; CPU %.1f ms per pass, %.3f %% of a core", m / 1024, rss[1] / 1024, rss[n] / 1024, n, cpu / n / hz * 1000 / passes, cpu / n / hz / win * 100
  }')

F_S=$(awk -v a="$T0" -v b="$(date +%s%N)" 'BEGIN{printf "%.0f", (b-a)/1e9}')

report f.read.stado "read: stado service list (beacons)"
report f.read.ssh "read: parallel ssh systemctl is-active"
[ "$ANS_ON" = 0 ] || report f.read.anst "read: Ansible tuned"
report f.deploy.stado "deploy: stado service ensure, cold"
report f.deploy.ssh "deploy: parallel ssh, one command a host"
[ "$ANS_ON" = 0 ] || report f.deploy.anst "deploy: Ansible tuned"
report f.conv.stado "converged: stado ensure, cold"
report f.conv.first "converged: stado ensure, keeper not running"
report f.conv.warm "converged: stado ensure, warm"
report f.conv.ssh "converged: parallel ssh is-active"
[ "$ANS_ON" = 0 ] || report f.conv.anst "converged: Ansible tuned"
report f.restart.warm "restart everywhere: stado warm"
report f.restart.ssh "restart everywhere: parallel ssh"
[ "$ANS_ON" = 0 ] || report f.restart.anst "restart everywhere: Ansible tuned"
report f.verify.stado "verify: stado service verify, cold"
report f.verify.warm "verify: stado service verify, warm"
report f.report.stado "report cycle: stado optimize run, cold"
report f.report.warm "report cycle: stado optimize run, warm"

V_STADO=$("$BIN" version 2>/dev/null 9>&- | awk '{print $2}')
cat <<EOF

## fleet size: $N testbed hosts (booted in ${BOOT_S} s), stado $V_STADO, Ansible tuned with forks=$FORKS

Medians of $RUNS runs, whole commands, one process per run, the tools' runs interleaved; measured
in ${F_S} s; load average $LOAD0 at the start, $(loadavg) at the end. cold: new connections, no
keeper; warm: one keeper holding a connection to every host; keeper not running: the keeper allowed
but not running, as after its idle exit.

| operation at $N hosts | stado | parallel ssh | Ansible tuned | budget | stado against the budget |
| --- | --- | --- | --- | --- | --- |
| read one unit's state on every host | $(fmt f.read.stado) (beacons) | $(fmt f.read.ssh) | $(fmt f.read.anst) | — | $(ratio f.read.stado f.read.ssh) of ssh |
| deploy a new unit, cold | $(fmt f.deploy.stado) | $(fmt f.deploy.ssh) (1 command) | $(fmt f.deploy.anst) | ≤ parallel ssh | $(ratio f.deploy.stado f.deploy.ssh) |
| converged ensure, cold | $(fmt f.conv.stado) | $(fmt f.conv.ssh) (is-active) | $(fmt f.conv.anst) | — | $(ratio f.conv.stado f.conv.ssh) of ssh |
| converged ensure, keeper not running | $(fmt f.conv.first) | — | — | ≤ 1.1× cold | $(ratio f.conv.first f.conv.stado) of cold |
| converged ensure, warm | $(fmt f.conv.warm) | — | — | ≤ 1 s | $(fmt f.conv.warm) |
| restart one unit everywhere, warm | $(fmt f.restart.warm) | $(fmt f.restart.ssh) | $(fmt f.restart.anst) | ≤ 5 s | $(fmt f.restart.warm) |
| service verify, cold / warm | $(fmt f.verify.stado) / $(fmt f.verify.warm) | — | — | — | — |
| report cycle, nothing to do, cold / warm | $(fmt f.report.stado) / $(fmt f.report.warm) | — | — | warm ≤ 2 s | $(fmt f.report.warm) |

Host process (stado host run, 3 services, 30 s passes), read from /proc on the hosts over ${HP_WIN} s:
  $HP_SUMMARY
EOF
