#!/usr/bin/env bash
# bench-readhalf.sh - the read half at fleet size (issues 17 and 23,
# docs/bench.md): `stado service list` over HOSTS hosts × 20 services, as a
# whole process, on the file store and on etcd, for this tree ("after") and
# for the tree at commit BEFORE ("before"), measured side by side in the same
# run: the two binaries take turns, run for run, so a load that comes and goes
# slows both. Budget: 300 ms for `--json` at 1,000 hosts; the cost per row
# should stay flat from 1,000 to 10,000 hosts. It prints, per fleet size,
# store and form, the median wall time of RUNS runs of each binary, their
# ratio, the microseconds per row, the CPU time (user+sys) and peak RSS of
# this tree's median run and the output size, and asserts nothing.
#
# Before the timed runs each binary reads each store once, untimed: a
# repeated read is what an operator does, and it is what the validated-
# registry cache (docs/limits.md) serves. Each binary gets a cache dir of
# its own in the work dir (XDG_CACHE_HOME), never the caller's.
#
# Usage: scripts/bench-readhalf.sh       (make bench runs it from bench-compare.sh)
#
# Environment:
#   HOSTS="1000 10000"  fleet sizes (20 services per host)
#   RUNS=5              timed runs of each figure and binary
#   FORMS="json text"   output forms
#   BEFORE=141eef6      the commit measured beside this tree; empty: none
#   KEEP=1              keep the work dir
#
# It starts one etcd member of its own on free 127.0.0.1 ports, with its data
# in the work dir, and stops it by pid on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a SIZES <<<"${HOSTS:-1000 10000}"
read -r -a FORM_LIST <<<"${FORMS:-json text}"
RUNS=${RUNS:-5}
BEFORE=${BEFORE-141eef6}
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

CGO_ENABLED=0 go build -o "$W/after/stado" ./cmd/stado
go test -c -o "$W/etcdstore.test" ./store/etcdstore
BINS=(after)
if [ -n "$BEFORE" ]; then
  # the old tree from git's objects into the work dir: no checkout, no
  # worktree, nothing of the caller's tree changes
  mkdir -p "$W/before-src"
  git archive "$BEFORE" | tar -x -C "$W/before-src"
  (cd "$W/before-src" && GOFLAGS=-buildvcs=false go build -o "$W/before/stado" ./cmd/stado)
  BINS=(before after)
fi

setsid etcd --name readhalf --data-dir "$W/etcd.data" \
  --listen-client-urls "http://127.0.0.1:$CP" --advertise-client-urls "http://127.0.0.1:$CP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "readhalf=http://127.0.0.1:$PP" --initial-cluster-state new --initial-cluster-token "readhalf-$$" \
  --quota-backend-bytes $((8 << 30)) \
  </dev/null >"$W/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$CP/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$CP/health" >/dev/null || { tail -5 "$W/etcd.log" >&2; die "etcd not healthy"; }

# one_run BIN URL ARGS... -> appends "wall user sys rss" to $W/runs.BIN
one_run() {
  local bin=$1 url=$2; shift 2
  XDG_CACHE_HOME="$W/$bin/cache" /usr/bin/time -f "%e %U %S %M" -o "$W/time.out" \
    "$W/$bin/stado" service list "$@" --stale-after 1000h --store "$url" >"$W/out.$bin"
  cat "$W/time.out" >>"$W/runs.$bin"
}

# median BIN -> "median_wall_ms cpu_ms_of_that_run max_rss_MiB output_MB"
median() {
  sort -n "$W/runs.$1" | awk -v n="$RUNS" -v bytes="$(stat -c %s "$W/out.$1")" '
    { w[NR]=$1; c[NR]=$2+$3; if ($4>rss) rss=$4 }
    END { m=int((n+1)/2); printf "%d %d %d %.1f\n", w[m]*1000, c[m]*1000, rss/1024, bytes/1e6 }'
}

echo "## read half at fleet size: stado service list, whole process, 20 services per host (median of $RUNS; budget 300 ms for --json at 1,000 hosts)"
[ -n "$BEFORE" ] && echo "before: commit $BEFORE; after: this tree; one untimed read of each store by each binary first (its cache warm)"
printf '%-6s %-5s %-5s %10s %9s %7s %11s %11s %8s %12s %10s %8s\n' \
  hosts store form before_ms after_ms ratio before_us/row after_us/row cpu_ms max_rss_MiB output_MB budget
for n in "${SIZES[@]}"; do
  for store in file etcd; do
    if [ "$store" = file ]; then url="file://$W/file-$n"; else url="etcd://127.0.0.1:$CP/readhalf/h$n"; fi
    STADO_ETCDSTORE_SEED_URL=$url STADO_ETCDSTORE_SEED_HOSTS=$n "$W/etcdstore.test" >/dev/null
    for form in "${FORM_LIST[@]}"; do
      args=(); [ "$form" = json ] && args=(--json)
      for bin in "${BINS[@]}"; do : >"$W/runs.$bin"; one_run "$bin" "$url" "${args[@]}"; : >"$W/runs.$bin"; done
      for _ in $(seq "$RUNS"); do
        for bin in "${BINS[@]}"; do one_run "$bin" "$url" "${args[@]}"; done
      done
      read -r wall cpu rss mb < <(median after)
      bwall=-; ratio=-; bus=-
      if [ -n "$BEFORE" ]; then
        read -r bwall _ _ _ < <(median before)
        ratio=$(awk -v a="$wall" -v b="$bwall" 'BEGIN{ if (b > 0) printf "%.2fx", a/b; else print "-" }')
        bus=$(awk -v w="$bwall" -v n="$n" 'BEGIN{printf "%.1f", w*1000/(n*20)}')
      fi
      aus=$(awk -v w="$wall" -v n="$n" 'BEGIN{printf "%.1f", w*1000/(n*20)}')
      verdict=-
      if [ "$form" = json ] && [ "$n" -eq 1000 ]; then verdict=met; [ "$wall" -le 300 ] || verdict=missed; fi
      printf '%-6s %-5s %-5s %10s %9s %7s %11s %11s %8s %12s %10s %8s\n' \
        "$n" "$store" "$form" "$bwall" "$wall" "$ratio" "$bus" "$aus" "$cpu" "$rss" "$mb" "$verdict"
    done
  done
done
echo "ratio: after/before wall time; us/row: wall time per listed row"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
