#!/usr/bin/env bash
# bench-etcd.sh - the etcd store's figures (docs/etcd.md): stado service list
# as a whole process over synthetic fleets on etcd and on the file store, the
# beacon publish load of a fleet, and registry compare-and-swap commits/s
# under 8 writers.
#
# Usage:
#   scripts/bench-etcd.sh [HOSTS...]     default: 1000 10000
#
# Environment:
#   RUNS=3          runs of each service list timing (the median is printed)
#   INTERVAL=15     beacon interval (s) for the publish load figure
#   LOAD_HOSTS=1000 fleet size for the publish load figure
#   KEEP=1          keep the work dir (stores, logs) instead of removing it
#
# It starts one etcd member of its own on free 127.0.0.1 ports with its data in
# a temporary dir and stops it by pid on exit. Nothing else is started.
set -euo pipefail

cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
INTERVAL=${INTERVAL:-15}
LOAD_HOSTS=${LOAD_HOSTS:-1000}
HOSTS=("$@")
[ ${#HOSTS[@]} -gt 0 ] || HOSTS=(1000 10000)

die() { echo "bench-etcd: $*" >&2; exit 1; }
command -v etcd >/dev/null || die "etcd is not installed (Debian package etcd-server)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"

W=$(mktemp -d /tmp/stado-bench-etcd.XXXXXX)
ETCD_PID=
cleanup() {
  if [ -n "$ETCD_PID" ] && kill -0 "$ETCD_PID" 2>/dev/null; then
    kill -TERM "$ETCD_PID"
    for _ in $(seq 100); do kill -0 "$ETCD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$ETCD_PID" 2>/dev/null && kill -KILL "$ETCD_PID"
  fi
  if [ "${KEEP:-}" = 1 ]; then echo "bench-etcd: kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT

free_port() { # a loopback port nothing listens on, from 24000 up
  local p
  for p in $(seq "$1" 24999); do
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
  die "no free port"
}
CP=$(free_port 24000)
PP=$(free_port $((CP + 1)))

echo "== build" >&2
CGO_ENABLED=0 go build -o "$W/stado" ./cmd/stado
go test -c -o "$W/etcdstore.test" ./store/etcdstore

echo "== etcd on 127.0.0.1:$CP" >&2
setsid etcd --name bench --data-dir "$W/etcd.data" \
  --listen-client-urls "http://127.0.0.1:$CP" --advertise-client-urls "http://127.0.0.1:$CP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "bench=http://127.0.0.1:$PP" --initial-cluster-state new --initial-cluster-token "bench-$$" \
  </dev/null >"$W/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$CP/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$CP/health" >/dev/null || { tail -5 "$W/etcd.log" >&2; die "etcd not healthy"; }

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_list URL -> "median_wall_s max_rss_MiB json_bytes"
time_list() {
  local url=$1 i walls= rss=0 w r
  for i in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$W/time.out" \
      "$W/stado" service list --json --stale-after 1000h --store "$url" >"$W/list.json"
    read -r w r <"$W/time.out"
    walls+="$w"$'\n'
    [ "$r" -gt "$rss" ] && rss=$r
  done
  printf '%s %s %s\n' "$(printf '%s' "$walls" | median)" "$((rss / 1024))" "$(stat -c %s "$W/list.json")"
}

echo
echo "## stado service list --json, whole process (median of $RUNS; 20 services per host)"
printf '%-7s %-5s %10s %12s %12s %10s\n' hosts store wall_s max_rss_MiB json_MB seed_s
for n in "${HOSTS[@]}"; do
  for store in file etcd; do
    if [ "$store" = file ]; then url="file://$W/file-$n"; else url="etcd://127.0.0.1:$CP/bench/h$n"; fi
    t0=$(date +%s.%N)
    STADO_ETCDSTORE_SEED_URL=$url STADO_ETCDSTORE_SEED_HOSTS=$n "$W/etcdstore.test"
    seed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    read -r wall rss bytes < <(time_list "$url")
    printf '%-7s %-5s %10s %12s %12.1f %10s\n' "$n" "$store" "$wall" "$rss" "$(awk -v b="$bytes" 'BEGIN{print b/1e6}')" "$seed"
  done
done

echo
echo "## Go benchmarks (go test -bench . -run '^\$' ./store/etcdstore/)"
"$W/etcdstore.test" -test.run '^$' -test.v -test.bench 'BeaconPublish' -test.benchtime 2000x | tee "$W/bench-beacon.txt" | grep -E '^Benchmark|bytes of JSON'
"$W/etcdstore.test" -test.run '^$' -test.bench 'RegistryUpdate8Writers' -test.benchtime 400x | grep -E '^Benchmark'
"$W/etcdstore.test" -test.run '^$' -test.bench 'ReadView1000Hosts' -test.benchtime 5x | grep -E '^Benchmark'

size=$(sed -n 's/.*units: \([0-9]*\) bytes of JSON.*/\1/p' "$W/bench-beacon.txt" | head -1)
[ -n "$size" ] || die "no beacon size in the benchmark output"
echo
echo "## beacon publish load: $LOAD_HOSTS hosts every ${INTERVAL}s, beacon $size bytes"
awk -v n="$LOAD_HOSTS" -v i="$INTERVAL" -v s="$size" 'BEGIN {
  b = n / i; key = length("stado/beacons/host00001")
  printf "beacons/s                 %8.1f\n", b
  printf "requests/s                %8.1f  (put + lease keep-alive per beacon)\n", 2 * b
  printf "raft proposals/s          %8.1f  (the put; keep-alives are answered by the leader)\n", b
  printf "value bytes/s             %8.0f  (%.0f KiB/s)\n", b * (s + key), b * (s + key) / 1024
  printf "MVCC growth/day           %8.1f GiB until compacted (see docs/etcd.md, compaction)\n", b * (s + key) * 86400 / 2^30
}'
