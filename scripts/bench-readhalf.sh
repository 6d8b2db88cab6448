#!/usr/bin/env bash
# bench-readhalf.sh - the read half at fleet size (issue 17, docs/limits.md):
# `stado service list` over HOSTS hosts × 20 services, as a whole process, in
# --json and in text, on the file store and on etcd, while it validates what
# it loads. Budget: 300 ms for each. It prints the median wall time of RUNS
# runs, the CPU time (user+sys) of the median run, the peak RSS and the
# output size, and asserts nothing.
#
# Usage: scripts/bench-readhalf.sh       (make bench runs it from bench-compare.sh)
#
# Environment:
#   HOSTS=1000   fleet size (20 services per host)
#   RUNS=5       timed runs of each figure
#   KEEP=1       keep the work dir
#
# It starts one etcd member of its own on free 127.0.0.1 ports, with its data
# in the work dir, and stops it by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-1000}
RUNS=${RUNS:-5}
die() { echo "bench-readhalf: $*" >&2; exit 1; }
command -v etcd >/dev/null || die "etcd is not installed (Debian package etcd-server)"
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package time)"

W=$(mktemp -d /tmp/stado-bench-readhalf.XXXXXX)
ETCD_PID=
cleanup() {
  if [ -n "$ETCD_PID" ] && kill -0 "$ETCD_PID" 2>/dev/null; then
    kill -TERM "$ETCD_PID"
    for _ in $(seq 100); do kill -0 "$ETCD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$ETCD_PID" 2>/dev/null && kill -KILL "$ETCD_PID"
  fi
  if [ "${KEEP:-}" = 1 ]; then echo "bench-readhalf: kept $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT

free_port() {
  local p
  for p in $(seq "$1" 25999); do
    ss -Hltn "sport = :$p" | grep -q . || { echo "$p"; return; }
  done
  die "no free port"
}
CP=$(free_port 25000)
PP=$(free_port $((CP + 1)))

go build -o "$W/stado" ./cmd/stado
go test -c -o "$W/etcdstore.test" ./store/etcdstore

setsid etcd --name readhalf --data-dir "$W/etcd.data" \
  --listen-client-urls "http://127.0.0.1:$CP" --advertise-client-urls "http://127.0.0.1:$CP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "readhalf=http://127.0.0.1:$PP" --initial-cluster-state new --initial-cluster-token "readhalf-$$" \
  </dev/null >"$W/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$CP/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$CP/health" >/dev/null || { tail -5 "$W/etcd.log" >&2; die "etcd not healthy"; }

# one URL -> "median_wall_ms cpu_ms_of_that_run max_rss_MiB output_MB"
measure() {
  local url=$1; shift
  local i w u s r
  : >"$W/runs"
  for i in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %U %S %M" -o "$W/time.out" \
      "$W/stado" service list "$@" --stale-after 1000h --store "$url" >"$W/out"
    read -r w u s r <"$W/time.out"
    echo "$w $u $s $r" >>"$W/runs"
  done
  sort -n "$W/runs" | awk -v n="$RUNS" -v bytes="$(stat -c %s "$W/out")" '
    { w[NR]=$1; c[NR]=$2+$3; if ($4>rss) rss=$4 }
    END { m=int((n+1)/2); printf "%d %d %d %.1f\n", w[m]*1000, c[m]*1000, rss/1024, bytes/1e6 }'
}

echo "## read half at fleet size: stado service list, whole process, $HOSTS hosts × 20 services (median of $RUNS; budget 300 ms)"
printf '%-5s %-5s %9s %8s %12s %10s %8s\n' store form wall_ms cpu_ms max_rss_MiB output_MB budget
for store in file etcd; do
  if [ "$store" = file ]; then url="file://$W/file"; else url="etcd://127.0.0.1:$CP/readhalf"; fi
  STADO_ETCDSTORE_SEED_URL=$url STADO_ETCDSTORE_SEED_HOSTS=$HOSTS "$W/etcdstore.test" >/dev/null
  for form in json text; do
    if [ "$form" = json ]; then read -r wall cpu rss mb < <(measure "$url" --json); else read -r wall cpu rss mb < <(measure "$url"); fi
    verdict=met; [ "$wall" -le 300 ] || verdict=missed
    printf '%-5s %-5s %9s %8s %12s %10s %8s\n' "$store" "$form" "$wall" "$cpu" "$rss" "$mb" "$verdict"
  done
done
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
