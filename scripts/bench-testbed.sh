# bench-testbed.sh - sourced by bench-compare.sh and bench-fleet.sh: on the
# testbed bench-lib.sh boots (N hosts under the machine-wide lock), declares
# the bench fleet (demo, bench-new and stado's host process on every host),
# ensures demo and the host process, and defines the tools (parallel ssh,
# Ansible in two configurations, stado cold and warm). The caller sets
# BENCH_NAME and runs from the repository root with `set -euo pipefail`. On
# exit it also closes the ControlPersist masters Ansible opened and the
# warm rows' keeper.
#
# Environment: BENCH_HOSTS, BENCH_RUNS, BENCH_RUNS_CHEAP, BENCH_FORKS
# (Ansible's forks, default BENCH_HOSTS), STADO_BIN, BENCH_KEEPER_CMD,
# BENCH_KEEP, TESTBED_LOCK; see the callers' headers.
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
N=${BENCH_HOSTS:-10}
RUNS=${BENCH_RUNS:-3}
RUNS_CHEAP=${BENCH_RUNS_CHEAP:-5}
FORKS=${BENCH_FORKS:-$N}
command -v ansible-playbook >/dev/null || die "ansible-playbook is missing (make deps installs ansible-core)"
[ -x /usr/bin/python3 ] || die "/usr/bin/python3 is missing (Ansible's interpreter on the hosts)"
[ "$N" -ge 1 ] && [ "$N" -le 250 ] || die "BENCH_HOSTS must be 1..250"
KEEPER_PID=
ANSIBLE_CP_DIRS=()

# close_masters DIR: ask every ControlPersist master with a socket in DIR to
# exit, through its socket (they are the ones Ansible started here).
close_masters() {
  local s
  for s in "$1"/*; do
    [ -S "$s" ] || continue
    ssh -o ControlPath="$s" -O exit bench-master </dev/null >/dev/null 2>&1 || true
  done
}
# bench_cleanup_extra: the warm rows' keeper and Ansible's masters.
bench_cleanup_extra() {
  [ -z "$KEEPER_PID" ] || stop_pid "$KEEPER_PID"
  local d
  for d in "${ANSIBLE_CP_DIRS[@]}"; do close_masters "$d"; done
}

# --- the testbed and the fleet ---------------------------------------------------
bench_up "$N"
UNIT_PATH=/etc/systemd/system/bench-new.service

# The registry: on every host `demo` (restarted and read), `bench-new`
# (deployed) and stado's own host process, publishing beacons every 30 s so
# that `service list` reads real ones while the passes cost little.
{
  echo "# written by scripts/$BENCH_NAME.sh"
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

store_url_on_hosts "$N"
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
# ansible_cfg VARIANT [SSH-LINES...]: the configuration of one variant.
# defaults: only the inventory, forks and where files go; every timed run
# starts with no ControlPersist master (they are closed after each run).
# tuned: pipelining, masters kept 10 minutes, opened by a priming run.
ansible_cfg() {
  local v=$1; shift
  printf '[defaults]\ninventory = %s\nforks = %s\nlocal_tmp = %s\n[ssh_connection]\n' "$W/inventory.ini" "$FORKS" "$W/ansible-local"
  printf '%s\n' "$@" "control_path_dir = $W/cp-$v"
}
ansible_cfg default > "$W/ansible-default.cfg"
ansible_cfg tuned "pipelining = True" "ssh_args = -C -o ControlMaster=auto -o ControlPersist=600s" > "$W/ansible-tuned.cfg"
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
beacons_ready || echo "$BENCH_NAME: demo is not active in every host's beacon after 90 s; service list reads what there is" >&2

