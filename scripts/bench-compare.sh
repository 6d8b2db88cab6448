#!/usr/bin/env bash
# bench-compare.sh - make bench's head-to-head: stado against parallel OpenSSH
# and Ansible (Debian's ansible-core) on one testbed of N simulated hosts
# (default 10). Every tool runs as a whole process per run, timed with
# `date +%s%N`; the runs of the tools are interleaved; each figure is the
# median of BENCH_RUNS (BENCH_RUNS_CHEAP where a run is cheap). It prints
# figures and ratios and asserts nothing. docs/bench.md says what each row
# measures and how.
#
# Usage (root; `make bench` runs it after `make deps build`):
#   scripts/bench-compare.sh
#
# Environment:
#   BENCH_HOSTS=10        testbed hosts (also Ansible's forks and the ssh fan-out)
#   BENCH_RUNS=3          timed runs of an expensive measurement (deploys, Ansible reads)
#   BENCH_RUNS_CHEAP=5    timed runs of a cheap one (restarts, stado and ssh reads)
#   STADO_BIN             the stado binary under test (default bin/stado)
#   BENCH_KEEPER_CMD      how to start stado's connection keeper for the warm
#                         runs (default: `stado host keeper`)
#   BENCH_KEEP=1          keep the work dir (logs, inventory, playbook, units)
#
# It holds the testbed's machine-wide lock (TESTBED_LOCK) from `up` to
# `down`, so a test process that wants the testbed waits instead of tearing
# this one down mid-run. Whatever it starts (the hosts, Ansible's
# ControlPersist masters, stado keepers) it stops on exit, by control socket
# or by pid.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${STADO_BIN:-$ROOT/bin/stado}
TB=$ROOT/tests/testbed/testbed.sh
N=${BENCH_HOSTS:-10}
RUNS=${BENCH_RUNS:-3}
RUNS_CHEAP=${BENCH_RUNS_CHEAP:-5}
LOCK=${TESTBED_LOCK:-/run/stado-testbed.lock}

die() { echo "bench-compare: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "the testbed needs root (namespaces, systemd as PID 1)"
[ -x "$BIN" ] || die "no stado binary at $BIN (make build)"
command -v ansible-playbook >/dev/null || die "ansible-playbook is missing (make deps installs ansible-core)"
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 is missing (Ansible's interpreter on the hosts)"
[ "$N" -ge 1 ] && [ "$N" -le 250 ] || die "BENCH_HOSTS must be 1..250"

W=$(mktemp -d /tmp/stado-bench-h2h.XXXXXX)
LOGS=$W/logs
mkdir -p "$LOGS" "$W/cold"
# A copy of the binary: a `make build` by someone else during the run must
# not change what is measured. The hosts get their own copy at `up`.
cp "$BIN" "$W/stado"
BIN=$W/stado
KEEPER_PID=
ANSIBLE_CP_DIRS=()
# stado's keeper socket lives under $XDG_RUNTIME_DIR when set, else under
# $HOME; every stado run here gets its HOME from this script.
unset XDG_RUNTIME_DIR STADO_KEEPER_SOCKET

# close_masters DIR: ask every ControlPersist master with a socket in DIR to
# exit, through its socket (they are the ones Ansible started here).
close_masters() {
  local s
  for s in "$1"/*; do
    [ -S "$s" ] || continue
    ssh -o ControlPath="$s" -O exit bench-master </dev/null >/dev/null 2>&1 || true
  done
}

# stop_keepers DIR: stop every stado keeper listening on a socket under DIR
# (all of them were started by this script's stado runs), by the pid that
# holds the socket. A keeper binds a temporary name in its socket's directory
# and renames it; ss shows the bound name, so the directory is matched.
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
  if [ -n "$KEEPER_PID" ] && kill -0 "$KEEPER_PID" 2>/dev/null; then
    kill -TERM "$KEEPER_PID"
    for _ in $(seq 50); do kill -0 "$KEEPER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$KEEPER_PID" 2>/dev/null
  fi
  stop_keepers "$W"
  for d in "${ANSIBLE_CP_DIRS[@]}"; do close_masters "$d"; done
  [ -z "${TB_UP:-}" ] || bash "$TB" down >/dev/null 2>&1
  exec 9>&-
  if [ "${BENCH_KEEP:-}" = 1 ] || [ $rc != 0 ]; then
    echo "bench-compare: work dir (logs) kept in $W" >&2
  else
    rm -rf "$W"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the testbed and the fleet ---------------------------------------------------
exec 9>"$LOCK"
if ! flock -n 9; then
  echo "bench-compare: someone else's testbed holds $LOCK; waiting for it (up to 15 min)" >&2
  flock -w 900 9 || die "the testbed lock stayed taken"
fi
export TESTBED_LOCK_HELD=1
bash "$TB" down >/dev/null 2>&1 || true
t0=$(date +%s%N)
TB_UP=1
STADO_BIN=$BIN bash "$TB" up "$N" 2>"$LOGS/testbed-up.log" 9>&- \
  || { cat "$LOGS/testbed-up.log" >&2; die "testbed up $N failed"; }
eval "$(bash "$TB" env)"
BOOT_S=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN{printf "%.1f", (b-a)/1e9}')
echo "bench-compare: $N testbed hosts up in ${BOOT_S} s" >&2

# The workstation: the testbed's key and known_hosts, no ssh_config (the
# registry names the addresses), the testbed's shared file store.
export HOME=$W/workstation
mkdir -p "$HOME"
export STADO_STORE=file://$TESTBED_STORE
export STADO_KNOWN_HOSTS=$TESTBED_KNOWN_HOSTS
export STADO_SSH_IDENTITY=$TESTBED_SSH_KEY
export STADO_SSH_CONFIG=/dev/null
export STADO_WRITER=bench
# No keeper unless a run says warm (builds without one ignore these).
export STADO_NO_KEEPER=1 STADO_KEEPER=off
addr() { echo "127.0.1.$1"; }
UNIT_PATH=/etc/systemd/system/bench-new.service

# The registry: on every host `demo` (restarted and read), `bench-new`
# (deployed) and stado's own host process, publishing beacons every 30 s so
# that `service list` reads real ones while the passes cost little.
{
  echo "# written by scripts/bench-compare.sh"
  echo "version: 1"
  echo "service_resolver: {refresh_seconds: 30}"
  # the autonomy cycle's authorization, for its section below
  echo "autonomy: {mode: enforce, max_concurrent: $N, max_fraction: 1, failure_budget: $N}"
  echo "targets:"
  for k in $(seq 1 "$N"); do
    cat <<EOF
  - name: host$k
    ssh: {address: $(addr "$k"), port: 22, user: root}
    os: linux
    services:
      - name: demo
        unit: demo.service
        program: /bin/sleep
        args: [infinity]
      - name: bench-new
        unit: bench-new.service
        program: /bin/sleep
        args: [infinity]
      - name: stado
        unit: stado.service
        program: /usr/local/bin/stado
        args: [host, run]
        env: {HOME: /root, STADO_INTERVAL: 30s, STADO_STORE: "$STADO_STORE"}
EOF
  done
} > "$W/fleet.yaml"

# Each host's stado reads the store URL from ~/.stado/store-url (written
# through nsenter: no ssh connection is made before the measurements but
# the setup ensures below).
for k in $(seq 1 "$N"); do
  bash "$TB" exec "host$k" sh -c "mkdir -p /root/.stado && printf '%s\n' '$STADO_STORE' > /root/.stado/store-url"
done
"$BIN" registry push "$W/fleet.yaml" --reason "bench fleet" >"$LOGS/setup-registry-push.log" 2>&1 9>&- \
  || { cat "$LOGS/setup-registry-push.log" >&2; die "registry push failed"; }

# The exact unit file stado writes for bench-new on each host: parallel ssh
# and Ansible install the same bytes.
for k in $(seq 1 "$N"); do
  mkdir -p "$W/units/host$k"
  "$BIN" host unit render bench-new --registry "$W/fleet.yaml" --host "host$k" > "$W/units/host$k/bench-new.service"
done

# demo first, then the host processes, whose first pass sees demo running.
for s in demo stado; do
  "$BIN" service ensure "$s" --all --reason "bench setup" >"$LOGS/setup-ensure-$s.log" 2>&1 9>&- \
    || { cat "$LOGS/setup-ensure-$s.log" >&2; die "ensure $s failed"; }
done
stop_keepers "$W"

# --- the tools ---------------------------------------------------------------------
SSH=(ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes
  -o UserKnownHostsFile="$TESTBED_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null
  -i "$TESTBED_SSH_KEY" -o IdentitiesOnly=yes -o ControlMaster=no -o ControlPath=none
  -o LogLevel=ERROR -l root)

# pssh CMD: CMD on every host at once, a new connection each.
pssh() {
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do
    "${SSH[@]}" "$(addr "$k")" "$@" </dev/null & pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}
ssh_restart_one() { "${SSH[@]}" "$(addr 1)" systemctl restart demo.service </dev/null; }
ssh_read_all() { pssh systemctl is-active demo.service; }
# ssh_deploy_host K: three connections, one after the other, as a shell
# loop over hosts would make them.
ssh_deploy_host() {
  local a; a=$(addr "$1")
  "${SSH[@]}" "$a" "cat > $UNIT_PATH" < "$W/units/host$1/bench-new.service" &&
    "${SSH[@]}" "$a" systemctl daemon-reload </dev/null &&
    "${SSH[@]}" "$a" systemctl start bench-new.service </dev/null
}
ssh_deploy_all() {
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do ssh_deploy_host "$k" & pids+=($!); done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}

# Ansible: one inventory, two configurations.
{
  echo "[bench]"
  for k in $(seq 1 "$N"); do echo "host$k ansible_host=$(addr "$k")"; done
  echo
  echo "[bench:vars]"
  echo "ansible_user=root"
  echo "ansible_ssh_private_key_file=$TESTBED_SSH_KEY"
  echo "ansible_ssh_common_args='-o UserKnownHostsFile=$TESTBED_KNOWN_HOSTS -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes'"
  echo "ansible_python_interpreter=/usr/bin/python3"
} > "$W/inventory.ini"
# defaults: only the inventory, forks and where files go. Every timed run
# starts with no ControlPersist master: they are closed after each run.
cat > "$W/ansible-default.cfg" <<EOF
[defaults]
inventory = $W/inventory.ini
forks = $N
local_tmp = $W/ansible-local
[ssh_connection]
control_path_dir = $W/cp-default
EOF
# tuned: pipelining, masters kept 10 minutes, opened by a priming run.
cat > "$W/ansible-tuned.cfg" <<EOF
[defaults]
inventory = $W/inventory.ini
forks = $N
local_tmp = $W/ansible-local
[ssh_connection]
pipelining = True
ssh_args = -C -o ControlMaster=auto -o ControlPersist=600s
control_path_dir = $W/cp-tuned
EOF
mkdir -p "$W/cp-default" "$W/cp-tuned" "$W/ansible-local"
ANSIBLE_CP_DIRS=("$W/cp-default" "$W/cp-tuned")
cat > "$W/deploy.yml" <<EOF
- hosts: bench
  gather_facts: false
  tasks:
    - name: write the unit file
      ansible.builtin.copy:
        src: "$W/units/{{ inventory_hostname }}/bench-new.service"
        dest: $UNIT_PATH
        mode: "0644"
    - name: daemon-reload and start
      ansible.builtin.systemd:
        name: bench-new.service
        daemon_reload: true
        state: started
EOF
# ans VARIANT CMD...: Ansible with that variant's configuration. Its
# ControlPersist masters must not inherit the testbed lock (fd 9).
ans() {
  local v=$1; shift
  ANSIBLE_CONFIG=$W/ansible-$v.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_NOCOWS=1 "$@" 9>&-
}
ans_restart_one() { ans "$1" ansible host1 -o -m ansible.builtin.systemd -a "name=demo.service state=restarted"; }
ans_read_all() { ans "$1" ansible bench -o -m ansible.builtin.command -a "systemctl is-active demo.service"; }
ans_deploy_all() { ans "$1" ansible-playbook "$W/deploy.yml"; }
after_default() { close_masters "$W/cp-default"; }

# stado MODE ARGS...: one stado process. cold: no keeper (STADO_NO_KEEPER)
# and a HOME of its own that no other run uses, so no
# connection or keeper of an earlier run can serve it; warm: the keeper
# allowed, and the one HOME of the warm runs, whose keeper keeps connections.
COLD=0
stado() {
  local mode=$1; shift
  if [ "$mode" = warm ]; then
    HOME=$W/warm env -u STADO_NO_KEEPER -u STADO_KEEPER "$BIN" "$@" 9>&-
  else
    COLD=$((COLD + 1)); mkdir -p "$W/cold/$COLD"
    HOME=$W/cold/$COLD "$BIN" "$@" 9>&-
  fi
}
stado_restart_one() { stado "$1" service restart demo --host host1; }
stado_read_all() { stado "$1" service list; }
stado_ensure_all() { stado "$1" service ensure bench-new --all --settle 1s --reason bench; }
after_cold() { stop_keepers "$W/cold"; }

# remove_new: bench-new gone from every host (through nsenter, no ssh):
# stopped, disabled, its file removed, systemd reloaded.
remove_new() {
  local pids=() k
  for k in $(seq 1 "$N"); do
    bash "$TB" exec "host$k" sh -c "systemctl stop bench-new.service; systemctl disable bench-new.service; rm -f $UNIT_PATH; systemctl daemon-reload; systemctl reset-failed bench-new.service; true" \
      >/dev/null 2>&1 & pids+=($!)
  done
  for k in "${pids[@]}"; do wait "$k" || true; done
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
    printf '  %-46s FAILED (%s); the end of its log:\n' "$label" "${FAILED[$key]}"
    tail -n 8 "$LOGS/$key.log" | sed 's/^/      /'
    return 0
  fi
  MED[$key]=$(printf '%s\n' ${TIMES[$key]} | sort -n | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m/1000}')
  printf '  %-46s %6.2f s   runs (ms): %s\n' "$label" "${MED[$key]}" "${TIMES[$key]}"
}
fmt() { case "${MED[$1]:-n/a}" in fail|n/a) echo "${MED[$1]:-n/a}" ;; *) printf '%.2f s' "${MED[$1]}" ;; esac; }
ratio() { # KEY-A KEY-B: A's median over B's
  local a=${MED[$1]:-n/a} b=${MED[$2]:-n/a}
  case "$a$b" in *fail*|*n/a*) echo "—"; return ;; esac
  awk -v a="$a" -v b="$b" 'BEGIN{ if (b <= 0) print "—"; else printf "%.2f×", a/b }'
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# `service list` must read real beacons: wait (up to 90 s) until demo is
# active in every host's.
beacons_ready() {
  "$BIN" service list --json 2>/dev/null 9>&- | /usr/bin/python3 -c '
import json, sys
n = int(sys.argv[1])
s = json.load(sys.stdin).get("services") or []
sys.exit(0 if sum(1 for x in s if x.get("service") == "demo" and x.get("state") == "active") >= n else 1)' "$N"
}
for _ in $(seq 90); do beacons_ready && break; sleep 1; done
beacons_ready || echo "bench-compare: demo is not active in every host's beacon after 90 s; service list reads what there is" >&2

H2H_T0=$(date +%s%N)
LOAD0=$(loadavg)
echo
echo "measuring on $N hosts, the tools' runs interleaved (load average at start: $LOAD0):"

# context: the price of one new ssh connection here
for i in $(seq 1 "$RUNS_CHEAP"); do timed ctx.ssh1 - - "${SSH[@]}" "$(addr 1)" true; done
report ctx.ssh1 "context: ssh host1 true, a new connection"

# 1. restart one unit on one host
ans_restart_one tuned >"$LOGS/prime-restart-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS_CHEAP"); do
  timed restart.stado - after_cold stado_restart_one cold
  timed restart.ssh - - ssh_restart_one
  timed restart.ansd - after_default ans_restart_one default
  timed restart.anst - - ans_restart_one tuned
done
report restart.stado "restart: stado service restart --host host1"
report restart.ssh "restart: ssh host1 systemctl restart"
report restart.ansd "restart: Ansible defaults"
report restart.anst "restart: Ansible tuned, warm"

# 2. read one unit's state on every host
ans_read_all tuned >"$LOGS/prime-read-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS_CHEAP"); do
  timed read.stado - - stado_read_all cold
  timed read.ssh - - ssh_read_all
  if [ "$i" -le "$RUNS" ]; then
    timed read.ansd - after_default ans_read_all default
    timed read.anst - - ans_read_all tuned
  fi
done
report read.stado "read: stado service list (beacons)"
report read.ssh "read: parallel ssh systemctl is-active"
report read.ansd "read: Ansible defaults"
report read.anst "read: Ansible tuned, warm"

# 3. deploy a new unit on every host, then 4. the same again (converged):
# in each round and for each tool the unit is removed from every host,
# deployed, and deployed again.
remove_new
ans_deploy_all tuned >"$LOGS/prime-deploy-tuned.log" 2>&1 || true
for i in $(seq 1 "$RUNS"); do
  timed deploy.stado remove_new after_cold stado_ensure_all cold
  timed conv.stado - after_cold stado_ensure_all cold
  timed deploy.ssh remove_new - ssh_deploy_all
  timed conv.ssh - - ssh_deploy_all
  timed deploy.ansd remove_new after_default ans_deploy_all default
  timed conv.ansd - after_default ans_deploy_all default
  timed deploy.anst remove_new - ans_deploy_all tuned
  timed conv.anst - - ans_deploy_all tuned
done
report deploy.stado "deploy: stado service ensure --settle 1s"
report conv.stado "converged: stado service ensure, again"
report deploy.ssh "deploy: parallel ssh, 3 connections a host"
report conv.ssh "converged: parallel ssh, the same again"
report deploy.ansd "deploy: Ansible defaults"
report conv.ansd "converged: Ansible defaults"
report deploy.anst "deploy: Ansible tuned, warm"
report conv.anst "converged: Ansible tuned, warm"

# the budget of a converged ensure, measured right after the deploys
for i in $(seq 1 "$RUNS_CHEAP"); do timed budget.ssh - - ssh_read_all; done
report budget.ssh "budget: parallel ssh systemctl is-active"

# 5. stado warm, through the connection keeper when this build has one.
# Every cold run above had a HOME of its own, so no keeper served it.
WARM_NOTE=
if "$BIN" host keeper --help >"$LOGS/keeper-help.log" 2>&1 9>&-; then
  # stado starts its keeper itself on first use; starting one here as well
  # makes the warm runs warm even in a build that does not.
  kcmd=("$BIN" host keeper)
  [ -z "${BENCH_KEEPER_CMD:-}" ] || read -r -a kcmd <<< "$BENCH_KEEPER_CMD"
  mkdir -p "$W/warm"
  echo "  warm: starting the keeper: ${kcmd[*]} (HOME=$W/warm)"
  HOME=$W/warm setsid env -u STADO_NO_KEEPER -u STADO_KEEPER "${kcmd[@]}" </dev/null >"$LOGS/keeper.log" 2>&1 9>&- &
  KEEPER_PID=$!
  sleep 1
  if ! kill -0 "$KEEPER_PID" 2>/dev/null; then
    # it may have detached, or stado starts its own on first use
    wait "$KEEPER_PID" && krc=0 || krc=$?
    KEEPER_PID=
    [ "$krc" = 0 ] || echo "  warm: the keeper exited $krc at once: $(tail -n 2 "$LOGS/keeper.log" | tr '\n' ' ')"
  fi
  stado_restart_one warm >"$LOGS/prime-warm-restart.log" 2>&1 || true
  stado_ensure_all warm >"$LOGS/prime-warm-ensure.log" 2>&1 || true
  find "$W/warm" -type s -name 'keeper*.sock' | grep -q . \
    || WARM_NOTE="warm: no keeper socket under $W/warm after the priming runs; the warm runs may be cold"
  for i in $(seq 1 "$RUNS_CHEAP"); do
    timed restart.warm - - stado_restart_one warm
    [ "$i" -gt "$RUNS" ] || timed conv.warm - - stado_ensure_all warm
  done
  report restart.warm "restart: stado warm (keeper)"
  report conv.warm "converged: stado warm (keeper)"
else
  MED[restart.warm]=n/a MED[conv.warm]=n/a
  WARM_NOTE="warm: n/a (no keeper in this build)"
  echo "  $WARM_NOTE"
fi

# 6. the autonomy cycle (stado optimize run, docs/autonomy.md): a report
# cycle with nothing to do (the fleet as the sections above left it: demo,
# bench-new and the host process running on every host), cold, one process;
# then an enforce cycle restoring bench-new on every host, all hosts at
# once. Before each enforce run bench-new is removed from every host and the
# beacons are let catch up (a plan does not act on a beacon that contradicts
# the verify); neither is timed.
beacons_say() { # STATE: bench-new reads STATE in every host's beacon
  "$BIN" service list --json 2>/dev/null 9>&- | /usr/bin/python3 -c '
import json, sys
n, want = int(sys.argv[1]), sys.argv[2]
s = json.load(sys.stdin).get("services") or []
sys.exit(0 if sum(1 for x in s if x.get("service") == "bench-new" and x.get("state") == want) >= n else 1)' "$N" "$1"
}
wait_beacons() { for _ in $(seq 75); do beacons_say "$1" && return 0; sleep 1; done; echo "bench-compare: bench-new is not $1 in every beacon after 75 s" >&2; }
break_new() { remove_new; wait_beacons missing; }
stado_cycle_report() { stado "$1" optimize run; }
stado_cycle_enforce() { stado "$1" optimize run --mode enforce --max-concurrent "$N" --settle 1s; }
wait_beacons active
for i in $(seq 1 "$RUNS_CHEAP"); do timed cycle.report - after_cold stado_cycle_report cold; done
report cycle.report "autonomy: report cycle, nothing to do"
for i in $(seq 1 "$RUNS"); do timed cycle.enforce break_new after_cold stado_cycle_enforce cold; done
report cycle.enforce "autonomy: enforce cycle restoring $N units"
# planning alone, from beacons and verify results: 1,000 hosts x 20
# services answered by in-process hosts (go test -bench).
PLAN_MS=n/a
if command -v go >/dev/null; then
  PLAN_MS=$( (go test -run '^$' -bench 'PlanThousandHostsTwentyServices' -benchtime 10x ./autonomy/ 2>"$LOGS/plan-bench.err" 9>&- || true) \
    | tee "$LOGS/plan-bench.log" | awk '/^BenchmarkPlanThousand/ {p=sprintf("%.0f ms", $3/1e6)} /^BenchmarkSweepAndPlan/ {s=sprintf("%.0f ms", $3/1e6)} END {if (p != "") printf "%s (%s with the sweep of in-process hosts)", p, s}')
  [ -n "$PLAN_MS" ] || PLAN_MS="failed (see $LOGS/plan-bench.log)"
fi
echo "  autonomy: planning 1,000 hosts x 20 services   $PLAN_MS"

# 7. the release flow (docs/release.md): a 10 MB product (tests/fixtures/
# relprod, padded) converged on every host, one new signed version per run,
# beside Ansible tuned copying a new 10 MB file and restarting its unit, and
# parallel ssh doing the same with cat and systemctl. Then the converge again
# with the image already present, beside one parallel ssh command per host.
REL=$W/release
mkdir -p "$REL"
rel_build() { # VERSION: relprod at VERSION padded to 10 MB, distinct bytes
  (cd "$ROOT/tests" && go build -buildvcs=false -ldflags "-X main.version=$1" -o "$REL/relprod-$1" ./fixtures/relprod) 9>&- &&
    head -c $((10 * 1024 * 1024 - $(stat -c %s "$REL/relprod-$1"))) /dev/urandom >> "$REL/relprod-$1"
}
REL_OK=1
if command -v go >/dev/null && "$BIN" release --help >/dev/null 2>&1 9>&-; then
  HOME=$REL "$BIN" release key generate --out "$REL" --name bench >"$LOGS/release-setup.log" 2>&1 9>&- || REL_OK=
  for k in $(seq 1 "$N"); do
    bash "$TB" exec "host$k" sh -c "mkdir -p /var/lib/stado/release/keys && cat > /var/lib/stado/release/keys/bench.pub" < "$REL/bench.pub" || REL_OK=
    # Ansible's copy of the product: its own unit on its own port, its file
    # under the host's own /var/lib/stado (the testbed shares the rest of
    # /var/lib between hosts)
    bash "$TB" exec "host$k" sh -c "mkdir -p /var/lib/stado/bench-rel && printf '[Service]\nExecStart=/var/lib/stado/bench-rel/relprod --addr $(addr "$k"):18502\n' > /etc/systemd/system/bench-rel-ans.service && systemctl daemon-reload" || REL_OK=
  done
  for i in $(seq 0 "$RUNS"); do
    rel_build "1.0.$i" >>"$LOGS/release-setup.log" 2>&1 &&
      "$BIN" release publish relprod "1.0.$i" "$REL/relprod-1.0.$i" --os linux --arch "$(go env GOARCH)" --key "$REL/bench.key" --reason bench >>"$LOGS/release-setup.log" 2>&1 9>&- || REL_OK=
  done
  # relprod joins the fleet (after the autonomy rows, which must not see
  # it missing), its first version installed and started, untimed
  awk '/ssh: \{address: / {a=$3; sub(/,$/, "", a)} {print} /STADO_INTERVAL: 30s/ {
      print "      - name: relprod\n        unit: relprod.service\n        program: /var/lib/stado/release/current/relprod"
      print "        args: [--addr, \"" a ":18501\"]\n        product: relprod" }' "$W/fleet.yaml" > "$W/fleet-release.yaml"
  { "$BIN" registry push "$W/fleet-release.yaml" --reason "bench: relprod" &&
    "$BIN" release version set relprod 1.0.0 --reason bench &&
    "$BIN" release version converge --all --max-concurrent "$N" &&
    "$BIN" service ensure relprod --all --reason bench; } >>"$LOGS/release-setup.log" 2>&1 9>&- || REL_OK=
  [ -n "$REL_OK" ] || { echo "  release: setup failed; the end of its log:"; tail -n 8 "$LOGS/release-setup.log" | sed 's/^/      /'; }
else
  REL_OK=
  echo "  release: n/a (no go toolchain or no release command in this build)"
fi
cat > "$W/release.yml" <<EOF
- hosts: bench
  gather_facts: false
  tasks:
    - name: copy the new build
      ansible.builtin.copy:
        src: "{{ build }}"
        dest: /var/lib/stado/bench-rel/relprod
        mode: "0755"
    - name: restart it
      ansible.builtin.systemd:
        name: bench-rel-ans.service
        state: restarted
EOF
REL_RUN=0
rel_next() { REL_RUN=$((REL_RUN + 1)); "$BIN" release version set relprod "1.0.$REL_RUN" --reason bench >/dev/null 2>&1 9>&-; }
stado_rel_converge() { stado "$1" release version converge --all --max-concurrent "$N"; }
ans_rel() { ans "$1" ansible-playbook "$W/release.yml" -e "build=$REL/relprod-1.0.$REL_RUN"; }
ssh_rel_host() {
  local a; a=$(addr "$1")
  "${SSH[@]}" "$a" "cat > /var/lib/stado/bench-rel/relprod.new && chmod 0755 /var/lib/stado/bench-rel/relprod.new && mv /var/lib/stado/bench-rel/relprod.new /var/lib/stado/bench-rel/relprod && systemctl restart bench-rel-ans.service" < "$REL/relprod-1.0.$REL_RUN"
}
ssh_rel_all() {
  local pids=() k rc=0
  for k in $(seq 1 "$N"); do ssh_rel_host "$k" & pids+=($!); done
  for k in "${pids[@]}"; do wait "$k" || rc=1; done
  return $rc
}
ssh_rel_read() { pssh systemctl is-active relprod.service; }
if [ -n "$REL_OK" ]; then
  ans_rel tuned >"$LOGS/prime-release-tuned.log" 2>&1 || true
  for i in $(seq 1 "$RUNS"); do
    rel_next
    timed rel.stado - after_cold stado_rel_converge cold
    timed rel.ssh - - ssh_rel_all
    timed rel.anst - - ans_rel tuned
    timed relsame.stado - after_cold stado_rel_converge cold
    timed relsame.ssh - - ssh_rel_read
  done
  report rel.stado "release: stado converge, new 10 MB version"
  report rel.ssh "release: parallel ssh cat + restart"
  report rel.anst "release: Ansible tuned copy + restart"
  report relsame.stado "release: stado converge, image present"
  report relsame.ssh "release: parallel ssh systemctl is-active"
fi
H2H_S=$(awk -v a="$H2H_T0" -v b="$(date +%s%N)" 'BEGIN{printf "%.0f", (b-a)/1e9}')

# --- the table ------------------------------------------------------------------
V_STADO=$("$BIN" version 2>/dev/null 9>&- | awk '{print $2}')
V_SSH=$(ssh -V 2>&1 | sed 's/^OpenSSH_\([^ ,]*\).*/\1/')
V_ANS=$(ansible --version 2>/dev/null | sed -n '1s/.*core \([^]]*\)].*/\1/p')
cat <<EOF

## head-to-head on $N testbed hosts: stado $V_STADO, OpenSSH $V_SSH, Ansible $V_ANS (forks=$N)

Medians of $RUNS_CHEAP runs (restarts; stado and ssh reads) or $RUNS (Ansible reads; deploys), whole
commands, one process per run, the tools' runs interleaved. stado and ssh are cold: new connections
every run. Measured in ${H2H_S} s; load average $LOAD0 at the start, $(loadavg) at the end.
One new ssh connection (ssh host1 true): $(fmt ctx.ssh1).

| operation | stado | parallel ssh | Ansible defaults | Ansible tuned, warm | stado/ssh | stado/Ansible defaults | stado/Ansible tuned |
| --- | --- | --- | --- | --- | --- | --- | --- |
| restart one unit on host1 | $(fmt restart.stado) | $(fmt restart.ssh) (1 host) | $(fmt restart.ansd) | $(fmt restart.anst) | $(ratio restart.stado restart.ssh) | $(ratio restart.stado restart.ansd) | $(ratio restart.stado restart.anst) |
| read one unit's state on every host | $(fmt read.stado) (beacons, no ssh) | $(fmt read.ssh) | $(fmt read.ansd) | $(fmt read.anst) | $(ratio read.stado read.ssh) | $(ratio read.stado read.ansd) | $(ratio read.stado read.anst) |
| deploy a new unit on every host | $(fmt deploy.stado) (--settle 1s) | $(fmt deploy.ssh) (3 conn./host) | $(fmt deploy.ansd) | $(fmt deploy.anst) | $(ratio deploy.stado deploy.ssh) | $(ratio deploy.stado deploy.ansd) | $(ratio deploy.stado deploy.anst) |
| the same deploy again, nothing changed | $(fmt conv.stado) | $(fmt conv.ssh) (same 3 conn./host) | $(fmt conv.ansd) | $(fmt conv.anst) | $(ratio conv.stado conv.ssh) | $(ratio conv.stado conv.ansd) | $(ratio conv.stado conv.anst) |

stado warm: connections kept between invocations by the keeper (\`stado host keeper\`), after a priming run.

| operation | stado cold | stado warm | warm/cold | warm/ssh | warm/Ansible tuned |
| --- | --- | --- | --- | --- | --- |
| restart one unit on host1 | $(fmt restart.stado) | $(fmt restart.warm) | $(ratio restart.warm restart.stado) | $(ratio restart.warm restart.ssh) | $(ratio restart.warm restart.anst) |
| the same deploy again, nothing changed | $(fmt conv.stado) | $(fmt conv.warm) | $(ratio conv.warm conv.stado) | $(ratio conv.warm conv.ssh) | $(ratio conv.warm conv.anst) |
EOF
[ -z "$WARM_NOTE" ] || echo "$WARM_NOTE"
cat <<EOF

Budget of a converged ensure: no more than one parallel \`ssh HOST systemctl is-active\` per host.
  parallel ssh systemctl is-active on $N hosts, new connections: $(fmt budget.ssh)
  stado converged ensure, cold: $(fmt conv.stado) = $(ratio conv.stado budget.ssh) the budget
  stado converged ensure, warm: $(fmt conv.warm) = $(ratio conv.warm budget.ssh) the budget
EOF
cat <<EOF

The autonomy cycle (docs/autonomy.md), one stado process per cycle, cold:

| cycle | stado | budget |
| --- | --- | --- |
| report over $N hosts, nothing to do (beacons + one verify sweep) | $(fmt cycle.report) | ≤ 1.5 s |
| enforce restoring bench-new on $N hosts (--max-concurrent $N --settle 1s) | $(fmt cycle.enforce) | — |
| planning alone, 1,000 hosts × 20 services, in-process hosts (go test -bench) | $PLAN_MS | ≤ 200 ms |
EOF
cat <<EOF

The release flow (docs/release.md): a new signed 10 MB build of relprod on $N hosts, canary first,
then the rest at once (--max-concurrent $N), each host proving a fresh pid on the new image and its
port; cold, one stado process per run.

| operation | stado | parallel ssh | Ansible tuned, warm | stado/Ansible tuned | budget |
| --- | --- | --- | --- | --- | --- |
| a new 10 MB version on every host, restarted | $(fmt rel.stado) | $(fmt rel.ssh) (cat + restart) | $(fmt rel.anst) (copy + restart) | $(ratio rel.stado rel.anst) | ≤ Ansible tuned |
| the same converge again, image present | $(fmt relsame.stado) | $(fmt relsame.ssh) (is-active) | — | — | ≤ one parallel ssh command: $(ratio relsame.stado relsame.ssh) |
EOF


# --- issues 17 and 23: the read half at fleet size -----------------------------
# stado service list over 1,000 and 10,000 hosts × 20 services, whole process,
# --json and text, on the file store and on etcd, this tree beside the commit
# before issue 23 (BEFORE=141eef6) in the same run, with ratios and the cost
# per row (budget 300 ms for --json at 1,000 hosts); its own etcd and stores,
# nothing of the testbed (scripts/bench-readhalf.sh).
echo
bash scripts/bench-readhalf.sh
