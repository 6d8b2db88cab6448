#!/usr/bin/env bash
# etcd-local.sh - etcd on 127.0.0.1 as plain background processes (no systemd),
# for trying the etcd store by hand (adapted from shared/testbed/etcd-local.sh).
# Go tests use package etcdtest next to this file instead: free ports, data
# under t.TempDir(), stopped by pid when the test ends.
# Needs Debian's etcd-server and etcd-client packages (scripts/deps.sh).
#
# Usage:
#   etcd-local.sh up [1|3]   start 1 member (default) or a 3-member cluster
#   etcd-local.sh down       stop the members this state dir started, by pid (idempotent)
#   etcd-local.sh status     etcdctl endpoint status for the running members
#   etcd-local.sh endpoints  print the client endpoints, comma-separated
#
# Member i (1..3): client http://127.0.0.1:2379(i-1), peer http://127.0.0.1:2380(i-1)
# (so a single member is client 23790, peer 23800).
# Environment: ETCD_LOCAL_DIR (default /tmp/stado-etcd) - data dirs, logs, pids.
set -euo pipefail

D=$(readlink -m "${ETCD_LOCAL_DIR:-/tmp/stado-etcd}")
die() { echo "etcd-local: $*" >&2; exit 1; }
log() { echo "etcd-local: $*" >&2; }

PSTART=
proc_start() { # pid -> PSTART = start time, empty if gone or zombie
  local st; PSTART=
  read -r st 2>/dev/null < "/proc/$1/stat" || return 0
  st=${st##*) }; set -- $st
  [ "$1" = Z ] || PSTART=${20}
}
alive() { # member -> 0 if the recorded process is still running
  local p s
  [ -s "$D/m$1.pid" ] && [ -s "$D/m$1.start" ] || return 1
  read -r p < "$D/m$1.pid"; read -r s < "$D/m$1.start"
  proc_start "$p"; [ -n "$PSTART" ] && [ "$PSTART" = "$s" ]
}
members() { local n=0; [ -s "$D/count" ] && read -r n < "$D/count"; seq 1 "$n"; }
endpoints() { local i e=; for i in $(members); do e+="${e:+,}127.0.0.1:2379$((i - 1))"; done; echo "$e"; }

cmd_up() {
  local n=${1:-1} i cluster= t0
  [ "$n" = 1 ] || [ "$n" = 3 ] || die "usage: etcd-local.sh up [1|3]"
  command -v etcd >/dev/null && command -v etcdctl >/dev/null || die "install etcd-server and etcd-client"
  mkdir -p "$D"
  for i in $(members); do alive "$i" && die "already running in $D (etcd-local.sh down first)"; done
  for i in $(seq 1 "$n"); do
    if ss -Hltn "sport = :2379$((i - 1)) or sport = :2380$((i - 1))" 2>/dev/null | grep -q .; then
      die "port 2379$((i - 1)) or 2380$((i - 1)) is in use on this machine"
    fi
  done
  rm -rf "$D"/m*; echo "$n" > "$D/count"
  for i in $(seq 1 "$n"); do cluster+="${cluster:+,}m$i=http://127.0.0.1:2380$((i - 1))"; done
  t0=$(date +%s.%N)
  for i in $(seq 1 "$n"); do
    setsid etcd --name "m$i" --data-dir "$D/m$i.data" \
      --listen-client-urls "http://127.0.0.1:2379$((i - 1))" --advertise-client-urls "http://127.0.0.1:2379$((i - 1))" \
      --listen-peer-urls "http://127.0.0.1:2380$((i - 1))" --initial-advertise-peer-urls "http://127.0.0.1:2380$((i - 1))" \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "etcd-local-$$" \
      </dev/null >"$D/m$i.log" 2>&1 &
    echo $! > "$D/m$i.pid"; proc_start $!; echo "$PSTART" > "$D/m$i.start"
  done
  for i in $(seq 300); do
    etcdctl --endpoints "$(endpoints)" endpoint health >/dev/null 2>&1 && break
    sleep 0.1
  done
  etcdctl --endpoints "$(endpoints)" endpoint health >/dev/null 2>&1 || { tail -5 "$D"/m*.log >&2; die "not healthy"; }
  log "up: $n member(s) healthy in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')s; endpoints $(endpoints)"
}

cmd_down() {
  local i p j
  [ -d "$D" ] || { log "nothing to stop"; return 0; }
  # One at a time, last member first: a member that is leader hands over
  # leadership while a quorum is left (stopping all at once makes the last
  # leader wait ~7s for a transfer that cannot happen).
  for i in $(members | sort -rn); do
    alive "$i" || continue
    read -r p < "$D/m$i.pid"
    kill -TERM "$p" 2>/dev/null || true
    for j in $(seq 150); do alive "$i" || break; sleep 0.1; done
    if alive "$i"; then log "m$i (pid $p) still running after 15s, SIGKILL"; kill -KILL "$p" 2>/dev/null || true; fi
  done
  rm -f "$D"/m*.pid "$D"/m*.start
  log "down"
}

case "${1:-}" in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) etcdctl --endpoints "$(endpoints)" endpoint status -w table ;;
  endpoints) endpoints ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; [ -z "${1:-}" ] || exit 2 ;;
esac
