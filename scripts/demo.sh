#!/usr/bin/env bash
# make demo: a small fleet of simulated hosts (real systemd, real sshd),
# services ensured over SSH, beacons read without SSH, and a service that
# stands recovered. Everything stays on loopback; the testbed is torn down
# at the end (and on any failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/bin/stado
TB=$ROOT/tests/testbed/testbed.sh
STORE_KIND=${STORE:-file}
N=3

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

if [ "$(id -u)" != 0 ]; then
  echo "demo: the testbed needs root (namespaces, systemd as PID 1)" >&2
  exit 1
fi

cleanup() {
  set +e
  [ -n "${RECEIVER_PID:-}" ] && kill "$RECEIVER_PID" 2>/dev/null
  [ -n "${ETCD_STARTED:-}" ] && bash tests/etcd/etcd-local.sh down >/dev/null 2>&1
  bash "$TB" down >/dev/null 2>&1
}
trap cleanup EXIT

say "boot $N simulated hosts (systemd as PID 1, sshd on 127.0.1.K:22)"
bash "$TB" down >/dev/null 2>&1 || true
STADO_BIN=$BIN bash "$TB" up $N
eval "$(bash "$TB" env)"

export STADO_SSH_CONFIG=$TESTBED_SSH_CONFIG
export STADO_KNOWN_HOSTS=$TESTBED_KNOWN_HOSTS
export STADO_SSH_IDENTITY=$TESTBED_SSH_KEY
export HOME=$TESTBED_DIR/workstation   # the workstation's own ~/.stado
mkdir -p "$HOME"
FLEET=examples/demo/fleet.yaml
if [ "$STORE_KIND" = etcd ]; then
  say "start a single-member etcd on 127.0.0.1:23790"
  bash tests/etcd/etcd-local.sh up 1
  ETCD_STARTED=1
  export STADO_STORE="etcd://$(bash tests/etcd/etcd-local.sh endpoints)/stado"
  FLEET=$TESTBED_DIR/fleet-etcd.yaml
  sed "s#file:///var/lib/stado-testbed/store#$STADO_STORE#" examples/demo/fleet.yaml > "$FLEET"
else
  export STADO_STORE=file://$TESTBED_STORE
fi
echo "store: $STADO_STORE"

say "declare the fleet: registry push (validated compare-and-swap)"
run "$BIN" registry push "$FLEET" --reason "demo fleet"
run "$BIN" registry show
run "$BIN" catalog show

say "ensure stado's host process and a file server on every host, over SSH"
for k in $(seq 1 $N); do
  run "$BIN" service ensure stado --host host$k --reason "demo: deploy the host process"
done
run "$BIN" service ensure files --all --reason "demo: the sample service"

say "a second ensure changes nothing and restarts nothing"
run "$BIN" service ensure files --all --reason "demo: idempotence"

say "wait for every host's beacon (no SSH from here on)"
deadline=$((SECONDS + 60))
until "$BIN" service list --json | grep -q '"state": "active"' && \
      [ "$("$BIN" service list --json | grep -c '"state": "active"')" -ge $((2 * N)) ]; do
  [ $SECONDS -lt $deadline ] || { echo "demo: beacons did not show every service active in 60 s" >&2; "$BIN" service list; exit 1; }
  sleep 1
done
run "$BIN" service list
run "$BIN" host health
run "$BIN" registry doctor || true

if [ -x scripts/demo-standing.sh ]; then
  source scripts/demo-standing.sh
fi

say "done; tearing the testbed down"
