#!/usr/bin/env bash
# bench-hostproc.sh - make bench's host process figures (issue 27, item 6;
# docs/bench.md): `stado host run` on one testbed host that declares 20
# services, at the default interval (15 s), run as the fleet runs it (the
# catalog's stado product, ensured over SSH, under the host's systemd). For
# every pass it prints the process's resident set (VmRSS of
# /proc/PID/status) and the CPU time the process used since the pass before
# (utime + stime of /proc/PID/stat, every thread), then the figures over the
# whole window beside the budgets (≤ 20 MB RSS, ≤ 0.1 % of a core) and
# beside Monit: measured when monit is installed (watching the same 20
# processes every 15 s), else the figure of /work/shared/BENCHMARKS.md. It
# asserts nothing.
#
# Usage (root; `make bench` runs it after `make deps build`):
#   scripts/bench-hostproc.sh
#
# Environment:
#   STADO_BIN         the stado binary under test (default bin/stado)
#   SERVICES=20       declared services besides stado itself
#   WARMUP=3          passes left out before the window (the first pass
#                     starts the process; the ones after it settle its heap)
#   PASSES=12         passes measured (12 × 15 s = 3 minutes)
#   BENCH_KEEP=1      keep the work dir (logs, registry)
#
# It holds the testbed's machine-wide lock (TESTBED_LOCK) from `up` to
# `down`, like scripts/bench-compare.sh (TESTBED_LOCK_HELD=1: the caller
# holds it), and stops what it started on exit (the host, and monit by pid).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=bench-hostproc
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
SERVICES=${SERVICES:-20}
WARMUP=${WARMUP:-3}
PASSES=${PASSES:-12}
INTERVAL=15 # the default of `stado host run --interval`; the registry sets none
BUDGET_KB=$((20 * 1000 * 1000 / 1024)) # 20 MB
MONIT_DOC="3.3 MB (Monit 5.33 watching 4 processes and a port, /work/shared/BENCHMARKS.md; not measured here)"
MONIT_PID=
bench_cleanup_extra() { [ -z "$MONIT_PID" ] || stop_pid "$MONIT_PID"; }

bench_up 1

svc() { printf 'svc%02d' "$1"; }
{
  echo "# written by scripts/bench-hostproc.sh"
  echo "version: 1"
  echo "targets:"
  echo "  - name: host1"
  echo "    ssh: {address: 127.0.1.1, port: 22, user: root}"
  echo "    os: linux"
  echo "    services:"
  for i in $(seq 1 "$SERVICES"); do
    echo "      - {name: $(svc "$i"), unit: $(svc "$i").service, program: /bin/sleep, args: [infinity]}"
  done
  echo "      - name: stado"
  echo "        unit: stado.service"
  echo "        program: /usr/local/bin/stado"
  echo "        args: [host, run]"
  echo "        env: {HOME: /root, STADO_STORE: \"$STADO_STORE\"}"
} >"$W/fleet.yaml"
store_url_on_hosts 1
"$BIN" registry push "$W/fleet.yaml" --reason "bench host process" >"$W/push.log" 2>&1 9>&- \
  || { cat "$W/push.log" >&2; die "registry push failed"; }
for i in $(seq 1 "$SERVICES"); do
  "$BIN" service ensure "$(svc "$i")" --host host1 --reason "bench setup" >>"$W/ensure.log" 2>&1 9>&- \
    || { tail -20 "$W/ensure.log" >&2; die "ensure $(svc "$i") failed"; }
done
"$BIN" service ensure stado --host host1 --reason "bench setup" >>"$W/ensure.log" 2>&1 9>&- \
  || { tail -20 "$W/ensure.log" >&2; die "ensure stado failed"; }

# The host process's pid as the machine sees it: the process in host1's
# pid namespace whose command line is `stado host run`.
INIT=$(cat "$TESTBED_DIR/hosts/host1/init.pid" 2>/dev/null) || die "no init pid of host1"
NS=$(readlink "/proc/$INIT/ns/pid") || die "host1's init $INIT is gone"
PID=
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$NS" ] || continue
  [[ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" =~ ^[^\ ]*stado\ host\ run\  ]] || continue
  PID=${p#/proc/}
done
[ -n "$PID" ] && [ -r "/proc/$PID/stat" ] || die "no stado host run in host1's pid namespace"
BEACON=$TESTBED_STORE/beacons~host1
TCK=$(getconf CLK_TCK)

pass_no() { grep -o '"pass":[0-9]*' "$BEACON" 2>/dev/null | head -1 | cut -d: -f2; }
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # utime + stime, every thread
# wait_pass N: until the beacon's pass is at least N (an interval and a half each)
wait_pass() {
  local deadline=$(( $(date +%s) + (INTERVAL * 3 / 2) * ($1 - ${2:-0} + 1) + 30 ))
  while [ "$(pass_no || echo 0)" -lt "$1" ] 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || die "the beacon did not reach pass $1 (at $(pass_no))"
    kill -0 "$PID" 2>/dev/null || die "the host process $PID ended"
    sleep 0.2
  done
}
wait_pass "$WARMUP"

echo "## host process: stado host run, 1 host, $SERVICES services + stado declared, pass every ${INTERVAL}s (budgets: RSS ≤ 20 MB, CPU ≤ 0.1 % of a core)"
printf '%-6s %9s %9s %12s %10s\n' pass rss_MB rss_MiB cpu_ms/pass cpu_%core
t_start=$(date +%s%N); c_start=$(cpu_ticks "$PID"); max_kb=0; c_prev=$c_start; t_prev=$t_start
first=$(( WARMUP + 1 )); last=$(( WARMUP + PASSES ))
for p in $(seq "$first" "$last"); do
  wait_pass "$p" "$first"
  sleep 1 # the pass has published; let it end
  kb=$(rss_kb "$PID"); c=$(cpu_ticks "$PID"); t=$(date +%s%N)
  [ "$kb" -gt "$max_kb" ] && max_kb=$kb
  awk -v p="$p" -v kb="$kb" -v dc="$((c - c_prev))" -v dt="$((t - t_prev))" -v tck="$TCK" 'BEGIN {
    printf "%-6s %9.1f %9.1f %12.0f %10.3f\n", p, kb*1024/1e6, kb/1024, dc*1000/tck, 100*(dc/tck)/(dt/1e9) }'
  c_prev=$c; t_prev=$t
done
t_end=$t_prev; c_end=$c_prev
last_kb=$(rss_kb "$PID")
split=$(awk '/^(RssAnon|RssFile):/{printf "%s %.1f MB  ", $1, $2*1024/1e6}' "/proc/$PID/status")
read -r cpu_pct cpu_s wall_s < <(awk -v dc="$((c_end - c_start))" -v dt="$((t_end - t_start))" -v tck="$TCK" \
  'BEGIN { printf "%.3f %.2f %.0f\n", 100*(dc/tck)/(dt/1e9), dc/tck, dt/1e9 }')
rss_verdict=met; [ "$max_kb" -le "$BUDGET_KB" ] || rss_verdict=missed
cpu_verdict=$(awk -v c="$cpu_pct" 'BEGIN { print (c <= 0.1) ? "met" : "missed" }')
echo
printf 'stado host run: peak RSS %.1f MB (%.1f MiB), at the end %.1f MB; budget 20 MB: %s\n' \
  "$(awk -v k="$max_kb" 'BEGIN{print k*1024/1e6}')" "$(awk -v k="$max_kb" 'BEGIN{print k/1024}')" \
  "$(awk -v k="$last_kb" 'BEGIN{print k*1024/1e6}')" "$rss_verdict"
printf 'stado host run: CPU %s s over %s s = %s %% of a core; budget 0.1 %%: %s\n' "$cpu_s" "$wall_s" "$cpu_pct" "$cpu_verdict"
echo "stado host run at the end: ${split}(file-backed: the binary's pages it touched)"
gomem=$(tr '\0' '\n' <"/proc/$PID/environ" | grep -E '^(GOMEMLIMIT|GOGC)=' | tr '\n' ' ' || true)
echo "its environment sets: ${gomem:-neither GOMEMLIMIT nor GOGC}"

# Monit beside it: the same 20 processes every 15 s, when installed.
if command -v monit >/dev/null; then
  mkdir -p "$W/monit"
  {
    echo "set daemon $INTERVAL"
    echo "set pidfile $W/monit/monit.pid"
    echo "set idfile $W/monit/monit.id"
    echo "set statefile $W/monit/monit.state"
    for i in $(seq 1 "$SERVICES"); do
      echo "check process $(svc "$i") matching \"^/bin/sleep infinity\""
    done
  } >"$W/monit/monitrc"
  chmod 600 "$W/monit/monitrc"
  monit -c "$W/monit/monitrc" -I >"$W/monit/monit.log" 2>&1 &
  MONIT_PID=$!
  sleep $(( INTERVAL * 4 ))
  m0=$(cpu_ticks "$MONIT_PID"); t0=$(date +%s%N)
  sleep $(( INTERVAL * 4 ))
  m1=$(cpu_ticks "$MONIT_PID"); t1=$(date +%s%N)
  awk -v kb="$(rss_kb "$MONIT_PID")" -v dc="$((m1 - m0))" -v dt="$((t1 - t0))" -v tck="$TCK" -v v="$(monit -V | head -1)" 'BEGIN {
    printf "monit (%s, 20 processes, every 15 s): RSS %.1f MB, CPU %.3f %% of a core (measured here)\n", v, kb*1024/1e6, 100*(dc/tck)/(dt/1e9) }'
else
  echo "monit: $MONIT_DOC"
fi
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
