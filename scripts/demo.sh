#!/usr/bin/env bash
# make demo: a small fleet of simulated hosts (real systemd as PID 1, real
# sshd), services ensured over SSH, beacons read without SSH, a service that
# stands recovered by its own host, and one recovered by a peer whose
# clients' requests to it stand waiting; then the fleet converges (every
# host's stado answers its own question) and `registry doctor` exits 0.
# Everything stays on loopback; the testbed lock is held throughout and the
# testbed is torn down at the end and on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/bin/stado
TB=$ROOT/tests/testbed/testbed.sh
STORE_KIND=${STORE:-file}
N=3

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
hostssh() { ssh -F "$TESTBED_SSH_CONFIG" "$@" </dev/null; }
# wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds.
wait_for() {
  local secs=$1 what=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "demo: $what: not within ${secs}s" >&2; return 1; fi
    sleep 0.5
  done
}

if [ "$(id -u)" != 0 ]; then
  echo "demo: the testbed needs root (namespaces, systemd as PID 1)" >&2
  exit 1
fi

PIDS=()
LOCKED=
HOLDER=
cleanup() {
  set +e
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "${ETCD_STARTED:-}" ] && bash tests/etcd/etcd-local.sh down >/dev/null 2>&1
  [ -n "$LOCKED" ] && bash "$TB" down >/dev/null 2>&1
  [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null
}
trap cleanup EXIT

# The testbed is one per machine: hold its lock for the whole demo, so a
# journey (go test takes the same lock) never tears these hosts down midway
# and the demo never tears down a journey's. A small helper holds it (its
# file is close-on-exec, so no process the demo starts inherits the lock);
# cleanup ends the helper, which releases it.
LOCK=${TESTBED_LOCK:-/run/stado-testbed.lock}
coproc LOCKER { exec python3 -c '
import fcntl, sys
f = open(sys.argv[1], "w")
fcntl.flock(f, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
' "$LOCK"; }
HOLDER=$LOCKER_PID
echo "demo: waiting for the testbed lock $LOCK (a journey may hold it)"
if ! read -r -t 3600 _ <&"${LOCKER[0]}"; then
  echo "demo: the testbed lock $LOCK was not free within an hour" >&2
  exit 1
fi
LOCKED=1
export TESTBED_LOCK_HELD=1

say "boot $N simulated hosts (systemd as PID 1, sshd on 127.0.1.K:22)"
bash "$TB" down >/dev/null 2>&1 || true
STADO_BIN=$BIN bash "$TB" up $N
eval "$(bash "$TB" env)"
# every host has its own /usr/local/bin: build the fixture aside, then
# place it in each host
go build -o "$TESTBED_DIR/stado-demo-fixture" ./tests/fixtures/answering
bash "$TB" install-bin "$TESTBED_DIR/stado-demo-fixture"

export STADO_SSH_CONFIG=$TESTBED_SSH_CONFIG
export STADO_KNOWN_HOSTS=$TESTBED_KNOWN_HOSTS
export STADO_SSH_IDENTITY=$TESTBED_SSH_KEY
export HOME=$TESTBED_DIR/workstation   # the workstation's own ~/.stado
mkdir -p "$HOME"
if [ "$STORE_KIND" = etcd ]; then
  say "start a single-member etcd on 127.0.0.1:23790"
  bash tests/etcd/etcd-local.sh down >/dev/null 2>&1 || true
  bash tests/etcd/etcd-local.sh up 1
  ETCD_STARTED=1
  export STADO_STORE="etcd://$(bash tests/etcd/etcd-local.sh endpoints | sed 's#http://##g')/stado"
else
  export STADO_STORE=file://$TESTBED_STORE
fi
echo "store: $STADO_STORE"

# Each host's stado (host process and channel program) reads the store URL
# from ~/.stado/store-url; host1 also gets a key to reach its peers.
for k in $(seq 1 $N); do
  hostssh host$k mkdir -p /root/.stado /root/.ssh
  printf '%s\n' "$STADO_STORE" | ssh -F "$TESTBED_SSH_CONFIG" host$k 'cat > /root/.stado/store-url'
done
ssh -F "$TESTBED_SSH_CONFIG" host1 'umask 077; cat > /root/.ssh/id_ed25519' < "$TESTBED_SSH_KEY"
ssh -F "$TESTBED_SSH_CONFIG" host1 'cat > /root/.ssh/known_hosts' < "$TESTBED_KNOWN_HOSTS"

say "declare the fleet and the site catalog (validated compare-and-swap writes)"
run "$BIN" catalog push examples/demo/site-catalog.yaml
# the host processes are told their store in their declaration (STADO_STORE)
sed "s#file:///var/lib/stado-testbed/store#$STADO_STORE#g" examples/demo/fleet.yaml > "$TESTBED_DIR/demo-fleet.yaml"
run "$BIN" registry push "$TESTBED_DIR/demo-fleet.yaml" --reason "demo fleet"
run "$BIN" registry show
run "$BIN" catalog show

say "ensure stado's host process and a file server on every host, over SSH"
run "$BIN" service ensure stado --all --reason "demo: deploy the host process"
run "$BIN" service ensure files --all --reason "demo: the sample service"

say "a second ensure changes nothing and restarts nothing"
run "$BIN" service ensure files --all --reason "demo: idempotence"

say "the read half: beacons only, no SSH"
all_active() {
  [ "$("$BIN" service list --json | python3 -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin)["services"] if s["service"] in ("stado","files") and s["state"]=="active"))')" -eq $((2 * N)) ]
}
wait_for 60 "every host's stado and files active in the beacons" all_active
run "$BIN" service list
run "$BIN" host health
run "$BIN" registry doctor || echo "(doctor exits 3: it lists what is declared but not yet deployed)"

say "a service that accepts and never answers is recovered by its own host"
rm -f "$TESTBED_DIR/alerts.jsonl"   # this run's alerts only
python3 scripts/alert-receiver.py 18999 "$TESTBED_DIR/alerts.jsonl" & PIDS+=($!)
hostssh host2 touch /var/tmp/demo-hold.marker
run "$BIN" service ensure demo-hold --host host2 --reason "demo: a service that will stand"
run "$BIN" service ensure demo-sealed --host host2 --reason "demo: a service that answers 503"
recovered() {
  "$BIN" service status demo-hold --host host2 --json | python3 -c '
import json,sys
a=json.load(sys.stdin)["hosts"][0].get("answering") or {}
f=(a.get("finished") or {}).get("answered") or {}
sys.exit(0 if a.get("state")=="finished" and f.get("successful") else 1)'
}
stood_once() { test -s "$TESTBED_DIR/alerts.jsonl"; }
wait_for 60 "demo-hold stood and was recovered" stood_once
wait_for 60 "demo-hold answers after its recovery" recovered
run "$BIN" service status demo-hold --host host2
run "$BIN" service status demo-sealed --host host2
echo "-- the recovery register on host2 (service recoveries --json, run on host2):"
hostssh host2 env HOME=/root /usr/local/bin/stado service recoveries --service demo-hold --json
echo "-- the alert the webhook received:"
cat "$TESTBED_DIR/alerts.jsonl"

say "a peer recovers host2's gateway while host2's own stado is stopped"
hostssh host2 systemctl stop stado.service
hostssh host2 touch /var/tmp/demo-brama.marker
run "$BIN" service ensure demo-brama --host host2 --reason "demo: the gateway"
run "$BIN" service ensure brama-proxy --host host1 --reason "demo: host1's resolver proxy"
echo "-- three clients on host1 send requests through host1's proxy (127.0.1.1:19602); they stand:"
CLIENTS=()
for i in 1 2 3; do
  curl -s -m 40 -X POST -d '{"q":"hi"}' http://127.0.1.1:19602/v1/chat/completions > "$TESTBED_DIR/client$i.out" 2>&1 & CLIENTS+=($!)
done
# The beacon that carries the recovery is kept: once the clients are
# answered, later passes see nothing standing and carry no block.
peer_recovered() {
  "$BIN" host health --host host1 --json > "$TESTBED_DIR/peer-health.json" || return 1
  python3 -c '
import json,sys
h=json.load(open(sys.argv[1]))["hosts"][0]
sys.exit(0 if any(p.get("recovery") or p.get("already_recovered") for p in h.get("peer_recoveries") or []) else 1)' "$TESTBED_DIR/peer-health.json"
}
wait_for 60 "host1 recovered demo-brama on host2" peer_recovered
echo "-- host1's beacon, peer_recoveries (host health --json, the pass that carried it):"
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["hosts"][0].get("peer_recoveries"), indent=2))' "$TESTBED_DIR/peer-health.json"
run "$BIN" host health --host host1
hostssh host1 env HOME=/root /usr/local/bin/stado service recoveries --service demo-brama --json
echo "-- a new request through the proxy is answered at once:"
run curl -s -m 10 -X POST -d '{"q":"hi"}' http://127.0.1.1:19602/v1/chat/completions
wait "${CLIENTS[@]}" || true
echo "-- what the standing clients finally got:"
cat "$TESTBED_DIR"/client*.out; echo

say "the fleet converges: host2's stado runs again, the 503 example is retired"
run "$BIN" service ensure stado --host host2 --reason "demo: host2's host process again"
run "$BIN" service retire demo-sealed --host host2 --reason "demo: the 503 example has been shown"
echo "-- the host process is the recovery unit: retiring it is refused (exit 3, recovery_unit):"
run "$BIN" service retire stado.service --host host3 --reason "demo: refused" || true
doctor_ok() { "$BIN" registry doctor; }
no_stado_warning() {
  "$BIN" service list --json | python3 -c '
import json,sys
def well(a):
    ans = ((a or {}).get("finished") or {}).get("answered") or {}
    return (a or {}).get("state") in ("finished", "waiting") and ans.get("successful") is True
rows=[s for s in json.load(sys.stdin)["services"] if s["service"]=="stado"]
bad=[(s["host"], s.get("answering")) for s in rows if not well(s.get("answering"))]
print("stado answers its own question on every host:", "yes" if rows and not bad else bad)
sys.exit(0 if rows and not bad else 1)'
}
wait_for 60 "stado answers its own question on every host" no_stado_warning
wait_for 90 "registry doctor reads the converged fleet" doctor_ok
run "$BIN" service list
run "$BIN" service status stado
echo "-- registry doctor exits 0 on the converged fleet:"
run "$BIN" registry doctor

say "done; tearing the testbed down"
