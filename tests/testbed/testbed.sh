#!/usr/bin/env bash
# testbed.sh - stado's testbed: N simulated hosts on one Linux machine for SSH
# end-to-end tests (adapted from shared/testbed/testbed.sh; see README.md here).
#
# Each host is a PID + mount + UTS + IPC + cgroup namespace with a real systemd
# as PID 1 (in container mode), its own hostname (hostK), its own /etc/systemd
# (so its own /etc/systemd/system), /etc/ssh, /root, /var/log/journal,
# /var/tmp, /tmp, /dev/shm, /run and boot id, and an OpenSSH server run by that
# host's systemd, listening only on 127.0.1.K:22.  All hosts share the root
# network namespace (loopback only: no veth, no bridge, no other addresses) and
# the rest of the filesystem.  'systemctl reboot' in a host boots it again;
# 'systemctl poweroff' leaves it down.
#
# stado additions: every host has a /usr/local/bin and a /var/lib/stado of
# its own (hosts/hostK/fs/usr-local-bin and fs/var-lib-stado), so a release
# installed on one host is not seen by the others; the testbed's bin directory
# (<state>/bin) holds the programs under test, and 'up' (with STADO_BIN) and
# 'install-bin' place each of them in every host's /usr/local/bin (a hard
# link, or a copy, renamed into place) except the bare hosts' (TESTBED_BARE:
# sshd only, no stado). The machine's own /usr/local/bin is not touched. And
# one store directory (TESTBED_STORE) that has the same path on the machine
# and in every host.
#
# Usage:
#   testbed.sh up N              boot host1..hostN (1 <= N <= 250); fails if already up
#   testbed.sh down [--purge]    stop every host of this testbed (idempotent);
#                                --purge also deletes the state and store directories
#   testbed.sh status            one line per host; exit 0 only if all are up
#   testbed.sh exec HOST CMD...  run CMD inside HOST via nsenter (no ssh involved)
#   testbed.sh ssh HOST [CMD...] ssh -F <state>/ssh_config HOST CMD...
#   testbed.sh install-bin PATH  install PATH as /usr/local/bin/<name> of every host
#                                that is not bare
#   testbed.sh env               print shell exports (TESTBED_DIR, TESTBED_SSH_CONFIG, ...)
#
# State directory (TESTBED_DIR, default /tmp/stado-testbed): id_ed25519[.pub]
# (client key), ssh_config, known_hosts, hosts.txt, bin/ (the programs every
# host's /usr/local/bin gets), hosts/hostK/ (the host's files, console.log,
# pid files; 'bare' marks a host whose /usr/local/bin stays empty).
#
# Environment:
#   TESTBED_DIR            state directory (default /tmp/stado-testbed)
#   TESTBED_STORE          shared store directory, same path everywhere
#                          (default /var/lib/stado-testbed/store); emptied by 'up'
#   STADO_BIN              at 'up': install this file as /usr/local/bin/stado of every host
#   TESTBED_BARE           at 'up': hosts ("host3 host4") whose /usr/local/bin stays
#                          empty (sshd only, no stado; 'install-bin' skips them)
#   TESTBED_BOOT_TIMEOUT   seconds to wait for the hosts to boot (default 120 plus 2 per
#                          host: 100 hosts took 90 s on 2 loaded cores)
#   TESTBED_DOWN_TIMEOUT   seconds to wait for a clean shutdown before SIGKILL (default 20)
#   TESTBED_LOCK           machine-wide lock file (default /run/stado-testbed.lock)
#   TESTBED_LOCK_HELD=1    the caller already holds TESTBED_LOCK (the Go package does)
#   TESTBED_LOGIND=1       keep systemd-logind (ssh logins get session scopes and
#                          user@0.service); default: masked, lighter
#   TESTBED_NO_INSTALL=1   never apt-get install openssh-server, fail instead
#   TESTBED_VERBOSE=1      timestamps of the phases of 'up'
#
# Must run as root, on a machine where systemd is installed but need not be PID 1.
# 'up N' first raises the kernel limits N hosts need (inotify instances and
# watches, pid_max; KERNEL_LIMITS below), only upward, saying each change on
# stderr, and fails naming the limit when it cannot raise one.
# Only one testbed per machine at a time (the addresses 127.0.1.K and the cgroup
# <cgroup2>/stado-testbed are fixed; TESTBED_LOCK serialises up and down).
set -euo pipefail

TB=$(readlink -m "${TESTBED_DIR:-/tmp/stado-testbed}")
STORE=$(readlink -m "${TESTBED_STORE:-/var/lib/stado-testbed/store}")
LOCK=${TESTBED_LOCK:-/run/stado-testbed.lock}
BOOT_TIMEOUT=${TESTBED_BOOT_TIMEOUT:-}
DOWN_TIMEOUT=${TESTBED_DOWN_TIMEOUT:-20}
IP_PREFIX=127.0.1
CG_NAME=stado-testbed
SYSTEMD_BIN=/lib/systemd/systemd
SELF=$(readlink -f "${BASH_SOURCE[0]}")
HOST_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Units masked in every host.  They either act on state the hosts share with
# the real machine (kernel, /dev, /etc, /var, the console) or are not wanted.
MASKED_UNITS=(
  # kernel / device management: would act on the real machine
  systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket
  systemd-udev-trigger.service systemd-udev-settle.service
  systemd-sysctl.service systemd-modules-load.service kmod-static-nodes.service
  systemd-binfmt.service proc-sys-fs-binfmt_misc.automount proc-sys-fs-binfmt_misc.mount
  sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount
  sys-fs-fuse-connections.mount dev-hugepages.mount
  systemd-journald-audit.socket systemd-pstore.service systemd-timesyncd.service
  modprobe@.service
  # would write to the shared root filesystem (/, /etc, /var/lib)
  systemd-remount-fs.service systemd-machine-id-commit.service systemd-firstboot.service
  systemd-sysusers.service systemd-update-done.service systemd-journal-catalog-update.service
  systemd-hwdb-update.service ldconfig.service systemd-random-seed.service
  systemd-tmpfiles-clean.timer
  # consoles: /dev/console and the ttys belong to the real machine
  getty.target getty-static.service console-getty.service container-getty@.service
  getty@.service serial-getty@.service
  # installed on the machine but not wanted in a host
  postgresql.service postgresql@.service
  # sshd must only listen on the host's own address (ssh.service, configured below)
  ssh.socket
)

die() { echo "testbed: $*" >&2; exit 1; }
log() { echo "testbed: $*" >&2; }
vlog() { [ "${TESTBED_VERBOSE:-0}" != 1 ] || echo "testbed: [${T0:+$(elapsed "$T0")s}] $*" >&2; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root"; }

# One testbed per machine: 'up' and 'down' hold a machine-wide lock on fd 9
# (closed for the detached launchers, or the next up/down would block forever).
# The Go package holds it for a whole test process and sets TESTBED_LOCK_HELD=1.
take_lock() {
  [ "${TESTBED_LOCK_HELD:-0}" = 1 ] && return 0
  exec 9>"$LOCK"
  flock -w "${TESTBED_LOCK_WAIT:-600}" 9 || die "another testbed holds $LOCK"
}

# --- pids: only processes this script started, identified by pid + start time ---
PSTART=
proc_start() { # pid -> sets PSTART to its start time (field 22 of /proc/pid/stat); empty if gone or zombie
  local st
  PSTART=
  read -r st 2>/dev/null < "/proc/$1/stat" || return 0
  st=${st##*) }            # strip "pid (comm) "
  set -- $st
  [ "$1" = Z ] || PSTART=${20}
}
is_ours() { # pidfile startfile -> 0 if that exact process is still alive
  local pid= start=
  # a launcher that ends removes its files: between the test and the read
  # they may be gone, which means the process is gone too
  { read -r pid < "$1" && read -r start < "$2"; } 2>/dev/null || return 1
  [ -n "$pid" ] && [ -n "$start" ] || return 1
  proc_start "$pid"
  [ -n "$PSTART" ] && [ "$PSTART" = "$start" ]
}
init_pid() { # host dir -> pid of its PID 1 (as seen from here), if alive
  is_ours "$1/init.pid" "$1/init.start" || return 1
  cat "$1/init.pid"
}
is_ns_init() { # pid -> 0 if it is PID 1 of a (non-root) pid namespace
  local l
  l=$(grep '^NSpid:' "/proc/$1/status" 2>/dev/null) || return 1
  set -- $l
  [ $# -ge 3 ] && [ "${!#}" = 1 ]
}

# --- cgroup2 hierarchy used to give each host its own cgroup subtree ---------
cg2_base() { # [nomount] -> path of a cgroup2 mount; empty with nomount if there is none
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    echo /sys/fs/cgroup
  elif [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
    echo /sys/fs/cgroup/unified
  elif [ "$(stat -fc %T "$TB/cgroup2" 2>/dev/null)" = cgroup2fs ]; then
    echo "$TB/cgroup2"
  elif [ "${1:-}" != nomount ]; then
    mkdir -p "$TB/cgroup2"
    mount -t cgroup2 cgroup2 "$TB/cgroup2" || die "no cgroup2 hierarchy and cannot mount one"
    echo "$TB/cgroup2"
  fi
}
cg_remove_tree() { # remove a cgroup directory tree bottom-up (only empty cgroups can go)
  local d=$1 i
  [ -d "$d" ] || return 0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "$d" ] || return 0
    sleep 0.2
  done
  log "could not remove cgroup $d (still has processes?)"
  return 1
}

# --- dependencies ------------------------------------------------------------
ensure_deps() {
  local c
  for c in unshare nsenter ssh ssh-keygen setsid flock timeout; do
    command -v "$c" >/dev/null || die "missing command: $c"
  done
  [ -x "$SYSTEMD_BIN" ] || die "systemd not installed ($SYSTEMD_BIN)"
  # Each host bind-mounts its own file over these; they must exist.
  [ -f /etc/machine-id ] || die "/etc/machine-id missing (an empty file is enough: touch /etc/machine-id)"
  if [ ! -x /usr/sbin/sshd ]; then
    [ "${TESTBED_NO_INSTALL:-0}" = 1 ] && die "openssh-server not installed"
    log "installing openssh-server"
    # Never let the package start sshd in the root namespace (it would listen
    # on 0.0.0.0:22): a policy-rc.d that denies all starts, if none exists.
    local made_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
      chmod 755 /usr/sbin/policy-rc.d
      made_policy=1
    fi
    local rc=0
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server; } \
      </dev/null >"$TB/apt.log" 2>&1 || rc=$?
    [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
    [ "$rc" = 0 ] || die "apt-get install openssh-server failed (see $TB/apt.log)"
  fi
}

# --- kernel limits a boot of N hosts needs -------------------------------------
# The hosts share one kernel and one root user, so the per-user limits add up
# over every host: each host's systemd and journald hold inotify instances
# (about 6 per host; a stock machine's 128 stop a boot at about host29) and
# watches (about 20 per host), and every process and thread of every host
# takes a pid (about 7 per host booted, a few dozen under a journey's calls).
# Each limit is raised only upward, to what N hosts need with room to spare,
# and every change is said on stderr; one that cannot be raised (not root,
# read-only /proc/sys) fails the boot before any host starts, naming the
# limit and the value needed. Root's keyrings (kernel.keys.root_maxkeys,
# about 6 per host) have a stock limit of a million; no unit of a host runs
# as another user.
#   name                          fixed part   per host
KERNEL_LIMITS=(
  "fs.inotify.max_user_instances  512          16"
  "fs.inotify.max_user_watches    8192         256"
  "kernel.pid_max                 16384        64"
)
sysctl_path() { local n=$1; echo "${TESTBED_SYSCTL_DIR:-/proc/sys}/${n//.//}"; }
raise_limits() { # hosts : raise each kernel limit a boot of that many hosts needs, or fail naming it
  local n=$1 l name fixed per need was have f
  for l in "${KERNEL_LIMITS[@]}"; do
    read -r name fixed per <<<"$l"
    need=$(( fixed + per * n ))
    f=$(sysctl_path "$name")
    read -r was < "$f" || die "cannot read $name ($f)"
    [ "$was" -ge "$need" ] && continue
    have=$was
    if { echo "$need" > "$f"; } 2>/dev/null && read -r have < "$f" && [ "$have" -ge "$need" ]; then
      log "raised $name from $was to $need (a boot of $n hosts)"
    else
      die "$name is $have; a boot of $n hosts needs at least $need and this cannot raise it (not root, or /proc/sys read-only): run 'sysctl -w $name=$need' on the machine, or boot fewer hosts"
    fi
  done
}

# --- per-host files ----------------------------------------------------------
# Generators not wanted in a host (masked per host in /etc/systemd/system-generators).
MASKED_GENERATORS=(
  systemd-getty-generator          # would add console-getty.service on the real /dev/console
  systemd-gpt-auto-generator systemd-cryptsetup-generator systemd-integritysetup-generator
  systemd-veritysetup-generator systemd-hibernate-resume-generator systemd-system-update-generator
  postgresql-generator
)

# Everything that is the same for all hosts, built once per 'up' into $TB/template.
prepare_template() {
  local t=$TB/template fs ss u
  fs=$t/fs
  rm -rf "$t"
  mkdir -p "$fs/etc-systemd" "$fs/etc-ssh/sshd_config.d" "$fs/root/.ssh" "$fs/var-log-journal" "$fs/var-tmp" \
    "$fs/usr-local-bin" "$fs/var-lib-stado"
  chmod 755 "$fs/usr-local-bin" "$fs/var-lib-stado"

  # /etc/systemd: the machine's config files (system.conf, journald.conf, ...)
  # but an /etc/systemd/system of its own that starts empty - so nothing enabled
  # on the real machine (e.g. postgresql) is enabled here - plus the default
  # target, sshd and the masks.
  find /etc/systemd -mindepth 1 -maxdepth 1 ! -name system -exec cp -a {} "$fs/etc-systemd/" \;
  ss=$fs/etc-systemd/system
  mkdir -p "$ss/multi-user.target.wants" "$fs/etc-systemd/journald.conf.d" "$fs/etc-systemd/system-generators"
  ln -s /lib/systemd/system/multi-user.target "$ss/default.target"
  ln -s /lib/systemd/system/ssh.service "$ss/multi-user.target.wants/ssh.service"
  ln -s /lib/systemd/system/ssh.service "$ss/sshd.service"
  for u in "${MASKED_UNITS[@]}"; do ln -s /dev/null "$ss/$u"; done
  if [ "${TESTBED_LOGIND:-0}" != 1 ]; then
    ln -s /dev/null "$ss/systemd-logind.service"
    ln -s /dev/null "$ss/dbus-org.freedesktop.login1.service"
  fi
  for u in "${MASKED_GENERATORS[@]}"; do ln -s /dev/null "$fs/etc-systemd/system-generators/$u"; done
  # journald: no copy of the machine's kernel log in every host; bounded size.
  printf '[Journal]\nReadKMsg=no\nSystemMaxUse=64M\n' > "$fs/etc-systemd/journald.conf.d/testbed.conf"

  # /etc/ssh: client files copied from the machine; sshd_config and host key per host.
  for u in moduli ssh_config; do if [ -e "/etc/ssh/$u" ]; then cp -a "/etc/ssh/$u" "$fs/etc-ssh/"; fi; done
  if [ -d /etc/ssh/ssh_config.d ]; then cp -a /etc/ssh/ssh_config.d "$fs/etc-ssh/"; fi

  # /root: a fresh home with the testbed's public key.
  for u in bashrc profile; do
    if [ -r "/usr/share/base-files/dot.$u" ]; then cp "/usr/share/base-files/dot.$u" "$fs/root/.$u"; fi
  done
  cp "$TB/id_ed25519.pub" "$fs/root/.ssh/authorized_keys"
  chmod 700 "$fs/root" "$fs/root/.ssh"; chmod 600 "$fs/root/.ssh/authorized_keys"
  chmod 1777 "$fs/var-tmp"
  chown root:systemd-journal "$fs/var-log-journal" 2>/dev/null || true
  chmod 2755 "$fs/var-log-journal"
}

prepare_host() {
  local k=$1 h=$TB/hosts/host$1 uuid
  rm -rf "$h"
  cp -a "$TB/template" "$h"
  echo "host$k" > "$h/hostname"
  read -r uuid < /proc/sys/kernel/random/uuid
  echo "${uuid//-/}" > "$h/machine-id"
  ssh-keygen -q -t ed25519 -N '' -C "root@host$k" -f "$h/fs/etc-ssh/ssh_host_ed25519_key"
  cat > "$h/fs/etc-ssh/sshd_config" <<EOF
# testbed host$k: sshd listens only on its own loopback address
Include /etc/ssh/sshd_config.d/*.conf
ListenAddress $IP_PREFIX.$k:22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM yes
UseDNS no
X11Forwarding no
PrintMotd no
PrintLastLog no
AcceptEnv LANG LC_*
MaxStartups 100:30:300
MaxSessions 100
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
}

write_client_config() {
  local n=$1 k
  {
    echo "# testbed ssh_config: use with 'ssh -F $TB/ssh_config hostK' or 'Include $TB/ssh_config'"
    for k in $(seq 1 "$n"); do printf 'Host host%s\n    HostName %s.%s\n' "$k" "$IP_PREFIX" "$k"; done
    cat <<EOF
Host host*
    User root
    Port 22
    IdentityFile $TB/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $TB/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    CheckHostIP no
    BatchMode yes
    PasswordAuthentication no
    ConnectTimeout 10
    ServerAliveInterval 15
    LogLevel ERROR
EOF
  } > "$TB/ssh_config"
  : > "$TB/known_hosts"
  for k in $(seq 1 "$n"); do
    printf 'host%s,%s.%s %s\n' "$k" "$IP_PREFIX" "$k" \
      "$(cut -d' ' -f1,2 < "$TB/hosts/host$k/fs/etc-ssh/ssh_host_ed25519_key.pub")" >> "$TB/known_hosts"
  done
  # /etc/hosts-format names, for clients that do not read ssh_config (not installed anywhere)
  for k in $(seq 1 "$n"); do printf '%s.%s host%s\n' "$IP_PREFIX" "$k" "$k"; done > "$TB/hosts.txt"
  chmod 600 "$TB/ssh_config" "$TB/known_hosts"
}

# --- inside the new namespaces, as PID 1, before exec'ing systemd -------------
hostinit() { # k tbdir
  local k=$1 tb=$2 h fs
  h=$tb/hosts/host$k; fs=$h/fs
  set -e
  mount --make-rprivate /
  echo "host$k" > /proc/sys/kernel/hostname
  # Kernel interfaces read-only, like systemd-nspawn does: keeps udev,
  # systemd-sysctl & co. from touching the real machine.
  # The inherited cgroup mounts show the machine's whole hierarchy; systemd
  # mounts its own cgroup2, whose root is this host's cgroup namespace.
  if mountpoint -q /sys/fs/cgroup; then umount -R /sys/fs/cgroup; fi
  mount -o remount,bind,ro /sys
  mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys
  # A boot id of its own for every boot (the kernel's is one for the machine),
  # so 'journalctl -b' and --list-boots see this host's boots; as nspawn does.
  cat /proc/sys/kernel/random/uuid > "$h/boot_id"
  mount --bind "$h/boot_id" /proc/sys/kernel/random/boot_id
  if [ -e /proc/sysrq-trigger ]; then
    mount --bind /proc/sysrq-trigger /proc/sysrq-trigger && mount -o remount,bind,ro /proc/sysrq-trigger
  fi
  # Per-host state.
  mount --bind "$fs/etc-systemd" /etc/systemd
  mount --bind "$fs/etc-ssh" /etc/ssh
  mount --bind "$fs/root" /root
  mount --bind "$fs/var-tmp" /var/tmp
  # A /usr/local/bin of its own (the stado under test, linked in by
  # install_bin) and a /var/lib/stado of its own (release images and state).
  mount --bind "$fs/usr-local-bin" /usr/local/bin
  mount --bind "$fs/var-lib-stado" /var/lib/stado
  [ -d /var/log/journal ] && mount --bind "$fs/var-log-journal" /var/log/journal
  if [ -e /etc/hostname ]; then mount --bind "$h/hostname" /etc/hostname; fi
  mount --bind "$h/machine-id" /etc/machine-id
  # Private tmpfs /run and /tmp (Debian's tmpfiles.d 'D /tmp' empties /tmp at
  # every boot, and the state dir may live under /tmp).  Mounted after the
  # binds above because it hides $tb when that is under /tmp.
  mount -t tmpfs -o mode=755,nosuid,nodev,size=10% tmpfs /run
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm     # (own IPC namespace too)
  # The real console belongs to the machine.
  mount --bind /dev/null /dev/console
  # container=... puts systemd in container mode (no kmod loading, and on
  # shutdown no swapoff / loop / DM detach - those would hit the real machine).
  # In container mode systemd reads its "kernel command line" from its argv.
  exec env -i container=testbed PATH="$HOST_PATH" \
    "$SYSTEMD_BIN" --system systemd.unified_cgroup_hierarchy=1 systemd.show_status=0
}

# --- the launcher: one per host, detached, in the root namespaces -------------
# It creates the host's namespaces and PID 1, records the pids, and waits.  When
# the host's systemd reboots (reboot(2) in a pid namespace kills its PID 1 with
# SIGHUP) it boots the host again, like systemd-nspawn does; on poweroff / halt /
# exit / kill it ends.
launcher() { # k tbdir cgroup-dir original-cgroup-dir
  local k=$1 tb=$2 cg=$3 orig=$4 h upid cpid rest rc i boots=0
  h=$tb/hosts/host$k
  echo $$ > "$h/launcher.pid.tmp"; proc_start $$; echo "$PSTART" > "$h/launcher.start"
  mv "$h/launcher.pid.tmp" "$h/launcher.pid"
  while [ ! -e "$h/stop" ]; do
    boots=$((boots + 1))
    echo "testbed: boot $boots of host$k at $(date -u +%FT%TZ)"
    # Enter the host's cgroup just for the fork: unshare, and so the cgroup
    # namespace it creates, starts there; then leave it again.
    echo $$ > "$cg/cgroup.procs"
    unshare --pid --mount --uts --ipc --cgroup --fork --mount-proc --propagation private \
      -- /bin/bash "$SELF" __hostinit "$k" "$tb" &
    upid=$!
    echo $$ > "$orig/cgroup.procs"
    cpid=
    for i in $(seq 400); do
      read -r cpid rest 2>/dev/null < "/proc/$upid/task/$upid/children" || true
      [ -n "$cpid" ] && break
      kill -0 "$upid" 2>/dev/null || break
      sleep 0.05
    done
    if [ -n "$cpid" ]; then
      # unshare itself stays in the root namespaces: move it out of the host's
      # cgroup (inside the host it would show up as pid 0 in the root cgroup
      # and break 'systemctl status' / systemd-cgls).
      echo "$upid" > "$orig/cgroup.procs" 2>/dev/null || true
      proc_start "$upid"; echo "$PSTART" > "$h/unshare.start"; echo "$upid" > "$h/unshare.pid"
      proc_start "$cpid"; echo "$PSTART" > "$h/init.start"; echo "$cpid" > "$h/init.pid.tmp"
      mv "$h/init.pid.tmp" "$h/init.pid"
    fi
    rc=0; wait "$upid" || rc=$?
    rm -f "$h/init.pid" "$h/init.start" "$h/unshare.pid" "$h/unshare.start"
    echo "testbed: host$k PID 1 ended (unshare status $rc) at $(date -u +%FT%TZ)"
    [ "$rc" = 129 ] || break          # 128 + SIGHUP: the host rebooted
  done
  rm -f "$h/launcher.pid" "$h/launcher.start"
}

launch_host() { # k cgroup2-base : start the launcher in the background, return at once
  local k=$1 h=$TB/hosts/host$1 cg=$2/$CG_NAME/host$1
  mkdir -p "$cg"
  setsid /bin/bash "$SELF" __launch "$k" "$TB" "$cg" "$2$ORIG_CG" </dev/null >>"$h/console.log" 2>&1 9>&- &
}

record_host() { # k : wait until the launcher has recorded the host's PID 1
  local k=$1 h=$TB/hosts/host$1 i
  for i in $(seq 400); do
    [ -s "$h/init.pid" ] && return 0
    sleep 0.05
  done
  cat "$h/console.log" >&2
  die "host$k did not start"
}

host_systemctl() { # pid args...
  local p=$1; shift
  nsenter -t "$p" -m -u -i -p -- env -i PATH="$HOST_PATH" systemctl "$@"
}

wait_host() { # k deadline_epoch
  local k=$1 deadline=$2 h=$TB/hosts/host$1 p st left
  p=$(init_pid "$h") || { log "host$k: PID 1 died; console:"; cat "$h/console.log" >&2; return 1; }
  left=$(( deadline - $(date +%s) )); [ "$left" -gt 0 ] || left=1
  # is-system-running --wait needs the private socket, which exists shortly after exec
  while :; do
    st=$(timeout "$left" nsenter -t "$p" -m -u -i -p -- env -i PATH="$HOST_PATH" \
           systemctl is-system-running --wait 2>/dev/null) || true
    case "$st" in running|degraded) break ;; esac
    [ "$(date +%s)" -lt "$deadline" ] || { log "host$k: boot timeout (state '$st')"; return 1; }
    init_pid "$h" >/dev/null || { log "host$k: PID 1 died"; return 1; }
    sleep 0.2
  done
  vlog "host$k: $st"
  [ "$st" = degraded ] && log "host$k: degraded: $(host_systemctl "$p" --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"
  # (the readiness probe uses a cheaper key exchange than OpenSSH's default sntrup761)
  while ! ssh -F "$TB/ssh_config" -o ConnectTimeout=2 -o KexAlgorithms=curve25519-sha256 "host$k" true </dev/null 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { log "host$k: sshd not reachable on $IP_PREFIX.$k:22"; return 1; }
    sleep 0.2
  done
  vlog "host$k: ssh ok"
}

# --- the shared store and the hosts' /usr/local/bin ---------------------------
STORE_MARK=.stado-testbed-store
clear_store() { # [remove] : empty the store dir (only one this script made), or remove it
  case "$STORE" in /|/tmp|/tmp/*|/var|/var/lib|/usr|/usr/*|/etc|/etc/*|/root|/proc/*|/sys/*|/run|/dev/*)
    die "TESTBED_STORE=$STORE: refusing (must be a dedicated directory outside /tmp, /usr, /etc)" ;;
  esac
  if [ -d "$STORE" ] && [ -n "$(ls -A "$STORE")" ] && [ ! -e "$STORE/$STORE_MARK" ]; then
    die "TESTBED_STORE=$STORE exists, is not empty and was not made by testbed.sh; refusing to empty it"
  fi
  rm -rf "$STORE"
  [ "${1:-}" = remove ] && return 0
  mkdir -p "$STORE"; chmod 700 "$STORE"
  : > "$STORE/$STORE_MARK"
}

install_bin() { # path [name] : atomically place a copy in $TB/bin, then in every host's /usr/local/bin
  local src=$1 name=${2:-} tmp h
  [ -f "$src" ] && [ -x "$src" ] || die "install-bin: $src is not an executable file"
  [ -n "$name" ] || name=$(basename "$src")
  case "$name" in ''|.*|*/*) die "install-bin: bad name '$name'" ;; esac
  mkdir -p "$TB/bin"
  tmp=$(mktemp "$TB/bin/.$name.XXXXXX")
  if ! { cp "$src" "$tmp" && chmod 755 "$tmp" && sync "$tmp" && mv -f "$tmp" "$TB/bin/$name"; }; then
    rm -f "$tmp"; die "install-bin: cannot install $src"
  fi
  sync "$TB/bin"
  for h in "$TB"/hosts/host*; do
    [ -d "$h/fs/usr-local-bin" ] && [ ! -e "$h/bare" ] || continue
    link_bin "$TB/bin/$name" "$h/fs/usr-local-bin" || die "install-bin: cannot install $name in $(basename "$h")"
  done
}

link_bin() { # file dir : place file in dir under its name, a hard link (a copy across filesystems), renamed into place
  local src=$1 dir=$2 name tmp
  name=$(basename "$src")
  [ "$dir/$name" -ef "$src" ] && return 0          # already that file (a rename would be a no-op)
  tmp="$dir/.$name.tmp.$$"
  rm -f "$tmp"
  if ! { ln "$src" "$tmp" 2>/dev/null || { cp "$src" "$tmp" && chmod 755 "$tmp" && sync "$tmp"; }; } \
     || ! mv -f "$tmp" "$dir/$name"; then
    rm -f "$tmp"; return 1
  fi
}

populate_bin() { # host dir : every program of $TB/bin in the host's /usr/local/bin, unless bare
  local h=$1 f
  [ -e "$h/bare" ] && return 0
  for f in "$TB"/bin/*; do
    [ -f "$f" ] || continue
    link_bin "$f" "$h/fs/usr-local-bin" || die "cannot install $(basename "$f") in $(basename "$h")"
  done
}

# --- subcommands -------------------------------------------------------------
any_alive() {
  local h
  for h in "$TB"/hosts/host*; do [ -d "$h" ] && init_pid "$h" >/dev/null && return 0; done
  return 1
}

cmd_up() {
  local n=${1:-} t0 cgb k deadline failed=0
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || die "usage: testbed.sh up N   (1..250)"
  need_root
  t0=$(now); T0=$t0
  mkdir -p "$TB"; chmod 700 "$TB"
  take_lock
  any_alive && die "already up in $TB (run 'testbed.sh down' first)"
  down_locked quiet                       # leftovers of a crashed run
  ensure_deps
  raise_limits "$n"
  cgb=$(cg2_base)
  for k in ${TESTBED_BARE:-}; do
    [[ "$k" =~ ^host[0-9]+$ ]] && [ "${k#host}" -ge 1 ] && [ "${k#host}" -le "$n" ] \
      || die "TESTBED_BARE: '$k' is not one of host1..host$n"
  done
  # the mount point of every host's own /var/lib/stado (the machine's stays as it is)
  [ -d /var/lib/stado ] || mkdir -p /var/lib/stado
  [ -f "$TB/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C testbed -f "$TB/id_ed25519"
  rm -rf "$TB/hosts"; mkdir -p "$TB/hosts" "$TB/bin"
  chmod 755 "$TB/bin"
  clear_store
  if [ -n "${STADO_BIN:-}" ]; then install_bin "$STADO_BIN" stado; fi
  vlog "preparing files"
  prepare_template
  for k in $(seq 1 "$n"); do prepare_host "$k"; done
  for k in ${TESTBED_BARE:-}; do : > "$TB/hosts/$k/bare"; done
  for k in $(seq 1 "$n"); do populate_bin "$TB/hosts/host$k"; done
  write_client_config "$n"
  echo "$n" > "$TB/count"
  vlog "launching"
  ORIG_CG=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup | sed 's:/$::')
  for k in $(seq 1 "$n"); do launch_host "$k" "$cgb"; done; vlog "spawned"
  for k in $(seq 1 "$n"); do record_host "$k"; done; vlog "recorded"
  vlog "launched; waiting for boot + sshd"
  deadline=$(( $(date +%s) + ${BOOT_TIMEOUT:-$(( 120 + 2 * n ))} ))
  local waiters=()
  for k in $(seq 1 "$n"); do wait_host "$k" "$deadline" 9>&- & waiters+=($!); done
  for k in "${waiters[@]}"; do wait "$k" || failed=1; done
  if [ "$failed" = 1 ]; then
    log "some hosts failed to come up; leaving them for inspection (testbed.sh status / down)"
    return 1
  fi
  log "up: $n host(s) in $(elapsed "$t0")s; ssh -F $TB/ssh_config host1"
}

down_locked() { # [quiet]
  local quiet=${1:-} h p f i alive cgb round stopped=0 targets=()
  local -A start=()
  cgb=$(cg2_base nomount)
  if [ ! -d "$TB/hosts" ] && { [ -z "$cgb" ] || [ ! -d "$cgb/$CG_NAME" ]; }; then
    [ "$quiet" = quiet ] || log "nothing to stop"
    return 0
  fi
  # No launcher may boot its host again from now on.
  for h in "$TB"/hosts/host*; do [ -d "$h" ] && : > "$h/stop"; done
  for round in 1 2 3; do
    targets=(); start=()
    # Targets: the PID 1 of each host, from the pid files (checked against the
    # recorded start time) ...
    for h in "$TB"/hosts/host*; do
      [ -d "$h" ] || continue
      if is_ours "$h/init.pid" "$h/init.start"; then
        read -r p < "$h/init.pid"; targets+=("$p"); start[$p]=$PSTART
      elif is_ours "$h/unshare.pid" "$h/unshare.start"; then   # PID 1 not recorded yet
        read -r p < "$h/unshare.pid"; read -r p f 2>/dev/null < "/proc/$p/task/$p/children" || true
        if [ -n "$p" ] && is_ns_init "$p"; then proc_start "$p"; targets+=("$p"); start[$p]=$PSTART; fi
      fi
    done
    # ... and, should the state dir have been lost, any namespace PID 1 still
    # in this testbed's cgroup tree (only this script puts processes there).
    if [ -n "$cgb" ] && [ -d "$cgb/$CG_NAME" ]; then
      for f in "$cgb/$CG_NAME"/host*/init.scope/cgroup.procs; do
        [ -r "$f" ] || continue
        while read -r p; do
          [ -n "$p" ] && [ -z "${start[$p]:-}" ] && is_ns_init "$p" || continue
          proc_start "$p"; [ -n "$PSTART" ] || continue
          log "no pid file for namespace init $p ($f); stopping it"
          targets+=("$p"); start[$p]=$PSTART
        done < "$f"
      done
    fi
    if [ ${#targets[@]} = 0 ]; then
      alive=0
      for h in "$TB"/hosts/host*; do is_ours "$h/launcher.pid" "$h/launcher.start" && alive=1; done
      [ "$alive" = 1 ] && [ "$round" != 3 ] || break
      sleep 0.5; continue                 # a launcher is starting or ending a host
    fi
    [ "$stopped" = 0 ] && stopped=${#targets[@]}
    # 1. ask each systemd to power off (for systemd in a container that means: exit)
    for p in "${targets[@]}"; do kill -s RTMIN+4 "$p" 2>/dev/null || true; done
    # 2. wait; then SIGKILL a namespace's PID 1, and the kernel kills the whole namespace
    for i in $(seq $(( DOWN_TIMEOUT * 10 ))); do
      alive=0
      for p in "${targets[@]}"; do proc_start "$p"; [ "$PSTART" = "${start[$p]}" ] && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    for p in "${targets[@]}"; do
      proc_start "$p"
      if [ "$PSTART" = "${start[$p]}" ]; then log "pid $p: no clean exit in ${DOWN_TIMEOUT}s, SIGKILL"; kill -KILL "$p" 2>/dev/null || true; fi
    done
    # 3. the launchers (and their unshare children) end once PID 1 is gone
    for h in "$TB"/hosts/host*; do
      [ -d "$h" ] || continue
      for i in $(seq 50); do
        is_ours "$h/launcher.pid" "$h/launcher.start" || is_ours "$h/unshare.pid" "$h/unshare.start" || break
        sleep 0.1
      done
    done
  done
  # 4. anything of ours still there gets SIGKILL, by its recorded pid
  for h in "$TB"/hosts/host*; do
    [ -d "$h" ] || continue
    for f in launcher unshare init; do
      if is_ours "$h/$f.pid" "$h/$f.start"; then
        read -r p < "$h/$f.pid"; log "$(basename "$h"): $f pid $p still alive, SIGKILL"; kill -KILL "$p" 2>/dev/null || true
      fi
    done
    rm -f "$h"/{launcher,unshare,init}.{pid,start} "$h/stop"
  done
  # 5. cgroups
  if [ -n "$cgb" ]; then cg_remove_tree "$cgb/$CG_NAME" || true; fi
  [ "$quiet" = quiet ] || log "down: $stopped host(s) stopped"
}

cmd_down() {
  need_root
  take_lock
  down_locked
  if [ "${1:-}" = --purge ]; then
    if [ "$(stat -fc %T "$TB/cgroup2" 2>/dev/null)" = cgroup2fs ]; then umount "$TB/cgroup2"; fi
    rm -rf "$TB"
    clear_store remove
  fi
}

host_procs() { # init pid -> pids in that pid namespace
  local ns p
  ns=$(readlink "/proc/$1/ns/pid") || return 0
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$ns" ] && echo "${p#/proc/}"
  done
  return 0
}

mem_kib() { # pids... -> "rss_kib pss_kib"
  local p rss=0 pss=0 v
  for p in "$@"; do
    v=$(awk '/^VmRSS:/{print $2}' "/proc/$p/status" 2>/dev/null); rss=$(( rss + ${v:-0} ))
    v=$(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null); pss=$(( pss + ${v:-0} ))
  done
  echo "$rss $pss"
}

cmd_status() {
  local h k p st sshd procs m ok=0 n=0
  [ -d "$TB/hosts" ] || { echo "no testbed in $TB"; return 1; }
  printf '%-8s %-12s %-8s %-10s %-5s %6s %9s %9s\n' HOST ADDRESS PID1 STATE SSHD PROCS RSS_MiB PSS_MiB
  for h in $(ls -d "$TB"/hosts/host* | sort -V); do
    k=${h##*/host}; n=$((n+1))
    if p=$(init_pid "$h"); then
      st=$(host_systemctl "$p" is-system-running 2>/dev/null) || true
      sshd=no; ss -Hltn "src $IP_PREFIX.$k:22" 2>/dev/null | grep -q . && sshd=yes
      mapfile -t procs < <(host_procs "$p")
      read -r rss pss < <(mem_kib "${procs[@]}")
      printf '%-8s %-12s %-8s %-10s %-5s %6s %9.1f %9.1f\n' "host$k" "$IP_PREFIX.$k" "$p" "${st:-?}" "$sshd" \
        "${#procs[@]}" "$(awk -v v="$rss" 'BEGIN{print v/1024}')" "$(awk -v v="$pss" 'BEGIN{print v/1024}')"
      case "$st" in running|degraded) [ "$sshd" = yes ] && ok=$((ok+1)) ;; esac
    else
      printf '%-8s %-12s %-8s %-10s\n' "host$k" "$IP_PREFIX.$k" - down
    fi
  done
  echo "ssh config: $TB/ssh_config   known_hosts: $TB/known_hosts   key: $TB/id_ed25519"
  [ "$ok" = "$n" ]
}

cmd_exec() {
  local host=${1:-} k h p
  [ -n "$host" ] && [ $# -ge 2 ] || die "usage: testbed.sh exec HOST CMD..."
  shift
  k=${host#host}; h=$TB/hosts/host$k
  p=$(init_pid "$h") || die "$host is not running"
  exec nsenter -t "$p" -m -u -i -p -C -- env -i PATH="$HOST_PATH" HOME=/root USER=root LOGNAME=root \
    TERM="${TERM:-dumb}" LANG=C.UTF-8 "$@"
}

cmd_ssh() {
  [ $# -ge 1 ] || die "usage: testbed.sh ssh HOST [CMD...]"
  [ -f "$TB/ssh_config" ] || die "no testbed in $TB"
  exec ssh -F "$TB/ssh_config" "$@"
}

cmd_env() {
  cat <<EOF
export TESTBED_DIR=$TB
export TESTBED_SSH_CONFIG=$TB/ssh_config
export TESTBED_KNOWN_HOSTS=$TB/known_hosts
export TESTBED_SSH_KEY=$TB/id_ed25519
export TESTBED_STORE=$STORE
export TESTBED_BIN=$TB/bin
export TESTBED_HOSTS="$(for k in $(seq 1 "$(cat "$TB/count" 2>/dev/null || echo 0)"); do printf 'host%s ' "$k"; done)"
EOF
}

main() {
  local cmd=${1:-}; shift || true
  case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    status) cmd_status ;;
    exec) cmd_exec "$@" ;;
    ssh) cmd_ssh "$@" ;;
    env) cmd_env ;;
    install-bin) [ $# = 1 ] || die "usage: testbed.sh install-bin PATH"; install_bin "$1" ;;
    __raise-limits) raise_limits "$@" ;;   # tests: with TESTBED_SYSCTL_DIR, a fake /proc/sys
    __hostinit) hostinit "$@" ;;
    __launch) launcher "$@" ;;
    *) sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; [ -z "$cmd" ] || [ "$cmd" = -h ] || [ "$cmd" = --help ] || exit 2 ;;
  esac
}
main "$@"
