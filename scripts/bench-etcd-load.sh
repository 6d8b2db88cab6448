#!/usr/bin/env bash
# bench-etcd-load.sh - the store under a fleet's load (issue 27, item 7;
# docs/bench.md): a 3-member etcd cluster on loopback, HOSTS simulated hosts
# publishing real beacons at the default interval (scripts/etcdload: each
# host is a beacon.Runner, the pass of `stado host run`), while `stado
# service list` runs every few seconds, a Desktop page watches (`stado
# desktop`, its /changes long poll and the /rows refresh it triggers) and a
# report cycle runs (`stado optimize run --mode report`). It prints the
# write rate, the bytes per second clients send to and read from the
# cluster, the list latency idle and under the load, and then the cluster's
# db size after PASSES passes per host compressed in time, with stado's own
# compaction (store/etcdstore: every 1,000 revisions, to 10,000 behind). It
# asserts nothing. The whole run takes about 5 minutes.
#
# Usage: scripts/bench-etcd-load.sh       (make bench runs it)
#
# Environment:
#   HOSTS=1000        simulated hosts (20 declared services each)
#   LIVE=90           seconds of live passes at the default interval (15 s)
#   PASSES=720        passes per host in the compressed hour (720 × 5 s)
#   HOUR_MAX=150      seconds the compressed hour may take; it stops there
#                     and says how far it got
#   PACKING=on        `stado store packing --on` before any host publishes
#                     (beacons stored packed, docs/etcd.md); off: verbatim
#   KEEP=1            keep the work dir (member data, logs)
#
# It starts the three members (127.0.0.1, free ports from 26000), a desktop
# server, and the load, all of its own, with their data in a temporary dir,
# and stops them by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-1000}
LIVE=${LIVE:-90}
PASSES=${PASSES:-720}
HOUR_MAX=${HOUR_MAX:-150}
PACKING=${PACKING:-on}
INTERVAL=15
die() { echo "bench-etcd-load: $*" >&2; exit 1; }
command -v etcd >/dev/null || die "etcd is not installed (Debian package etcd-server)"
command -v jq >/dev/null || die "jq is missing"
[ "$LIVE" -ge 50 ] || die "LIVE must be at least 50 seconds (two intervals of start-up, then the window)"

W=$(mktemp -d /tmp/stado-bench-etcd-load.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill -0 "$p" 2>/dev/null || continue
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  if [ "${KEEP:-}" = 1 ]; then echo "bench-etcd-load: kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  local p
  for p in $(seq "$1" 26999); do
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
  die "no free port"
}

CGO_ENABLED=0 go build -o "$W/stado" ./cmd/stado
go build -o "$W/etcdload" ./scripts/etcdload

# --- the cluster --------------------------------------------------------------------
CPS=() PPS=() next=26000
for m in 1 2 3; do
  c=$(free_port "$next"); p=$(free_port $((c + 1))); next=$((p + 1))
  CPS+=("$c"); PPS+=("$p")
done
CLUSTER="m1=http://127.0.0.1:${PPS[0]},m2=http://127.0.0.1:${PPS[1]},m3=http://127.0.0.1:${PPS[2]}"
for m in 1 2 3; do
  c=${CPS[$((m - 1))]} p=${PPS[$((m - 1))]}
  setsid etcd --name "m$m" --data-dir "$W/m$m.data" \
    --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
    --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
    --initial-cluster "$CLUSTER" --initial-cluster-state new --initial-cluster-token "load-$$" \
    --quota-backend-bytes $((8 << 30)) \
    </dev/null >"$W/m$m.log" 2>&1 &
  PIDS+=($!)
done
for c in "${CPS[@]}"; do
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$c/health" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$c/health" >/dev/null || { tail -5 "$W"/m*.log >&2; die "member on $c not healthy"; }
done
URL="etcd://127.0.0.1:${CPS[0]},127.0.0.1:${CPS[1]},127.0.0.1:${CPS[2]}/load"
export STADO_STORE=$URL HOME=$W/home XDG_CACHE_HOME=$W/cache STADO_WRITER=bench
export STADO_NO_KEEPER=1 STADO_KEEPER=off STADO_SSH_CONFIG=/dev/null
mkdir -p "$HOME"

# metric NAME: the sum of NAME (every label set) over the three members' /metrics
metric() {
  local c sum=0 v
  for c in "${CPS[@]}"; do
    v=$(curl -sf "http://127.0.0.1:$c/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2} END {printf "%.0f", s}')
    sum=$(awk -v a="$sum" -v b="${v:-0}" 'BEGIN{printf "%.0f", a + b}')
  done
  echo "$sum"
}
# metric1 NAME: NAME on the first member (puts are applied by every member)
metric1() { curl -sf "http://127.0.0.1:${CPS[0]}/metrics" | awk -v n="$1" '$1 == n {printf "%.0f\n", $2}'; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# time_list: the wall ms of one `stado service list --json`, whole process
time_list() {
  local t0; t0=$(now_ms)
  "$W/stado" service list --json --stale-after 1000h >"$W/list.json" 2>>"$W/list.err" || { echo fail; return; }
  echo $(( $(now_ms) - t0 ))
}
stats() { # ms values on stdin -> "median max n"
  sort -n | awk '{a[NR]=$1} END { if (NR == 0) { print "- - 0"; exit } printf "%d %d %d\n", a[int((NR+1)/2)], a[NR], NR }'
}

"$W/etcdload" seed -store "$URL" -hosts "$HOSTS" >"$W/seed.json"
REG_BYTES=$(jq .registry_bytes "$W/seed.json")
# what the store holds and sends for it: etcdstore compresses large values
REG_STORED=$(ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:${CPS[0]}" get load/registry/document --print-value-only 2>/dev/null | wc -c)

echo "## the store under a fleet's load: 3 etcd members on 127.0.0.1 ($(etcd --version | head -1)), $HOSTS simulated hosts × 20 services, a pass every ${INTERVAL}s"
echo "registry: $HOSTS targets, $REG_BYTES bytes ($REG_STORED stored); a host reads it whole in its first pass, then only its revision until it moves"
case "$PACKING" in
  on) "$W/stado" store packing --on >/dev/null; echo "packing: on (beacons from 1 KiB stored packed; PACKING=off for verbatim)" ;;
  off) echo "packing: off (beacons stored verbatim)" ;;
  *) die "PACKING is on or off, not $PACKING" ;;
esac
echo "(the simulated hosts share 8 store clients; each decodes a registry of its own target only)"


# the desktop server and its page's watch: long poll /changes, then at most
# one /rows refresh a second, as desktop.js does
"$W/stado" desktop --listen 127.0.0.1:0 --json --refresh 5s >"$W/desktop.json" 2>"$W/desktop.err" &
DESK_PID=$!
PIDS+=($DESK_PID)
for _ in $(seq 100); do [ -s "$W/desktop.json" ] && break; sleep 0.1; done
DESK=$(jq -r '.url // .address // empty' "$W/desktop.json" 2>/dev/null || true)
[ -n "$DESK" ] || { cat "$W/desktop.json" "$W/desktop.err" >&2; die "the desktop did not print its address"; }
BASE=${DESK%%/\?*}
curl -sf -c "$W/jar" "$DESK" >/dev/null || die "the desktop refused its own address"
watch_page() { # until $W/stop-watch exists: appends the ms of each /rows refresh
  local gen=0 g t0 last=0
  while [ ! -e "$W/stop-watch" ]; do
    g=$(curl -sf -b "$W/jar" --max-time 30 "$BASE/changes?gen=$gen" | jq -r '.gen' 2>/dev/null) || { sleep 1; continue; }
    [ -n "$g" ] && [ "$g" != "$gen" ] || continue
    gen=$g
    t0=$(now_ms)
    [ $((t0 - last)) -ge 1000 ] || { sleep "$(awk -v w=$((1000 - t0 + last)) 'BEGIN{print w/1000}')"; t0=$(now_ms); }
    last=$t0
    curl -sf -b "$W/jar" "$BASE/rows" -o /dev/null && echo $(( $(now_ms) - t0 )) >>"$W/rows.ms"
  done
}

# --- the live load --------------------------------------------------------------
: >"$W/rows.ms"; : >"$W/list-load.ms"
"$W/etcdload" live -store "$URL" -hosts "$HOSTS" -interval "${INTERVAL}s" -for "${LIVE}s" >"$W/live.json" 2>"$W/live.err" &
LOAD_PID=$!; PIDS+=("$LOAD_PID")
watch_page & PIDS+=($!)
# stado speaks the members' JSON gateway, which hands each request to the
# member's own gRPC server: the etcd_network_client_grpc_* counters below
# count those requests in their protobuf size (the JSON on the wire is larger).
s0_tx=$(metric etcd_network_client_grpc_sent_bytes_total); t_s0=$(now_ms)
# start-up: in its first pass every host reads the whole registry; the
# window opens two intervals in, when every host has passed twice
sleep $((2 * INTERVAL))
m0_puts=$(metric1 etcd_mvcc_put_total); m0_rx=$(metric etcd_network_client_grpc_received_bytes_total)
m0_tx=$(metric etcd_network_client_grpc_sent_bytes_total); m0_peer=$(metric etcd_network_peer_sent_bytes_total); t_m0=$(now_ms)
t0=$(now_ms)
REPORT_MS=fail
if "$W/stado" optimize run --mode report --json >"$W/report.json" 2>"$W/report.err"; then REPORT_MS=$(( $(now_ms) - t0 )); fi
end=$(( t_s0 + (LIVE - 5) * 1000 ))
while [ "$(now_ms)" -lt "$end" ]; do
  time_list >>"$W/list-load.ms"
  sleep 3
done
m1_puts=$(metric1 etcd_mvcc_put_total); m1_rx=$(metric etcd_network_client_grpc_received_bytes_total)
m1_tx=$(metric etcd_network_client_grpc_sent_bytes_total); m1_peer=$(metric etcd_network_peer_sent_bytes_total); t_m1=$(now_ms)
wait "$LOAD_PID" || { cat "$W/live.err" >&2; die "the live load failed"; }
touch "$W/stop-watch"
# the page and its server go with the load: the server's own refreshes read
# every beacon, which the idle figures below are not about
kill "$DESK_PID" 2>/dev/null || true
wait "$DESK_PID" 2>/dev/null || true
# idle: the beacons are there (their leases outlive the load by 45 s), nobody writes
: >"$W/list-idle.ms"
for _ in 1 2 3 4 5; do time_list >>"$W/list-idle.ms"; done
# a report cycle with nobody writing: its own record says what reading the
# store and planning cost (the budget: 300 ms at 1,000 hosts), apart from the
# sweep, which here dials addresses with no host behind them
# (three cycles, one after another: the median of read + plan is the figure)
REPORT_IDLE_MS=fail
for k in 1 2 3; do
  t0=$(now_ms)
  if "$W/stado" optimize run --mode report --json >"$W/report-idle$k.json" 2>"$W/report-idle.err"; then
    [ "$k" != 2 ] || REPORT_IDLE_MS=$(( $(now_ms) - t0 ))
  fi
done
phases() { jq -r 'first(.. | objects | select(has("phases")) | .phases) | "read \(.read_ms|floor) + plan \(.plan_ms|floor) = \((.read_ms + .plan_ms)|floor) ms; sweep \(.sweep_ms|floor) ms"' "$1" 2>/dev/null || echo "?"; }
LIST_ROWS=$(jq '[.. | objects | select(has("service") and has("host"))] | length' "$W/list.json" 2>/dev/null || echo "?")

secs=$(awk -v a="$t_m0" -v b="$t_m1" 'BEGIN{print (b-a)/1000}')
rate() { awk -v d="$(( $2 - $1 ))" -v s="$secs" -v k="${3:-1}" 'BEGIN{printf "%.1f", d/s/k}'; }
read -r idle_med idle_max idle_n < <(grep -v fail "$W/list-idle.ms" | stats)
read -r load_med load_max load_n < <(grep -v fail "$W/list-load.ms" | stats)
read -r rows_med rows_max rows_n < <(stats <"$W/rows.ms")
jq -r '"load: \(.passes) passes in \(.seconds|floor) s (\(.failed) failed, \(.late) started over 1 s late), beacon \(.beacon_bytes) bytes, pass p50 \(.pass_p50_ms) ms p99 \(.pass_p99_ms) ms" + (if .first_error then "; first error: \(.first_error)" else "" end)' "$W/live.json"
printf '%-44s %12s\n' "start-up: MB the cluster sent (first passes)" "$(awk -v a="$s0_tx" -v b="$m0_tx" 'BEGIN{printf "%.0f", (b-a)/1e6}') in the first $((2 * INTERVAL)) s"
printf '%-44s %12s\n' "measured over ${secs} s of the live load" ""
printf '%-44s %12s\n' "writes/s (puts applied, member 1)" "$(rate "$m0_puts" "$m1_puts")"
printf '%-44s %12s\n' "bytes/s clients sent to the cluster (KiB/s)" "$(rate "$m0_rx" "$m1_rx" 1024)"
printf '%-44s %12s\n' "bytes/s the cluster sent clients (KiB/s)" "$(rate "$m0_tx" "$m1_tx" 1024)"
printf '%-44s %12s\n' "bytes/s between members (KiB/s)" "$(rate "$m0_peer" "$m1_peer" 1024)"
printf '%-44s %12s\n' "service list --json, idle after: median / max ms" "$idle_med / $idle_max (n=$idle_n)"
printf '%-44s %12s\n' "service list --json, under load" "$load_med / $load_max (n=$load_n, $LIST_ROWS rows)"
printf '%-44s %12s\n' "desktop /rows after a /changes wake" "$rows_med / $rows_max (n=$rows_n)"
printf '%-44s %12s\n' "optimize run --mode report, whole, ms" "$REPORT_MS"
[ "$REPORT_MS" != fail ] || tail -3 "$W/report.err" | sed 's/^/  report: /'
printf '%-44s %s\n' "  of which (its record)" "$(phases "$W/report.json")"
printf '%-44s %12s\n' "the same with nobody writing, whole, ms (2nd)" "$REPORT_IDLE_MS"
[ "$REPORT_IDLE_MS" != fail ] || tail -3 "$W/report-idle.err" | sed 's/^/  report: /'
for k in 1 2 3; do
  printf '%-44s %s\n' "  cycle $k of 3 (its record)" "$(phases "$W/report-idle$k.json")"
done
PLAN_MED=$(for k in 1 2 3; do jq -r 'first(.. | objects | select(has("phases")) | .phases) | (.read_ms + .plan_ms) | floor' "$W/report-idle$k.json" 2>/dev/null; done | stats | cut -d' ' -f1)
printf '%-44s %12s\n' "  read + plan, median of 3 (budget ≤ 300 ms)" "$PLAN_MED"

# --- the compressed hour -----------------------------------------------------------
# db MEMBER_PORT -> "total_MB in_use_MB"
db() {
  curl -sf "http://127.0.0.1:$1/metrics" | awk '
    $1 == "etcd_mvcc_db_total_size_in_bytes" { t = $2 }
    $1 == "etcd_mvcc_db_total_size_in_use_in_bytes" { u = $2 }
    END { printf "%.1f %.1f\n", t/1e6, u/1e6 }'
}
rev0=$(metric1 etcd_debugging_mvcc_current_revision)
echo
echo "compressed hour, db size of member 1 every 30 s:"
printf '  %-8s %12s %14s %16s %10s %12s\n' seconds revisions passes/host compacted_to db_MB in_use_MB
"$W/etcdload" hour -store "$URL" -hosts "$HOSTS" -passes "$PASSES" -max "${HOUR_MAX}s" -interval "${INTERVAL}s" >"$W/hour.json" 2>"$W/hour.err" &
HOUR_PID=$!; PIDS+=("$HOUR_PID"); t_h0=$(now_ms)
while kill -0 "$HOUR_PID" 2>/dev/null; do
  for _ in $(seq 30); do kill -0 "$HOUR_PID" 2>/dev/null || break; sleep 1; done
  r=$(( $(metric1 etcd_debugging_mvcc_current_revision) - rev0 ))
  printf '  %-8s %12s %14.1f %16s %10s %12s\n' $(( ($(now_ms) - t_h0) / 1000 )) "$r" "$(awk -v r="$r" -v n="$HOSTS" 'BEGIN{print r/n}')" \
    "$(metric1 etcd_debugging_mvcc_compact_revision)" $(db "${CPS[0]}")
done
wait "$HOUR_PID" || { cat "$W/hour.err" >&2; die "the compressed hour failed"; }
sleep 2
jq -r '"compressed hour: \(.passes) passes (\(.passes_per_host) per host of '"$PASSES"') in \(.seconds|floor) s, \(.failed) failed" + (if .complete then "" else " — stopped at HOUR_MAX='"$HOUR_MAX"' s before the end" end) + (if .first_error then "; first error: \(.first_error)" else "" end)' "$W/hour.json"
echo "($PASSES passes per host are an hour at a 5 s interval, three at the default 15 s; in time compressed, reads answered from memory)"
printf '%-44s %12s\n' "revisions written" "$(( $(metric1 etcd_debugging_mvcc_current_revision) - rev0 ))"
printf '%-44s %12s\n' "compacted to revision (member 1)" "$(metric1 etcd_debugging_mvcc_compact_revision)"
for m in 1 2 3; do
  read -r t u < <(db "${CPS[$((m - 1))]}")
  printf '%-44s %12s\n' "db size m$m (in use), MB" "$t ($u)"
done
echo "stado compacts every 1,000 revisions to 10,000 behind, so past ~11 passes per host the history stops growing:"
echo "the in-use size flat over the samples above is the size of any longer run; the db file is never defragmented here"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
