#!/usr/bin/env bash
# Installs what stado's tests and demo need on a Debian 12 machine, once:
# OpenSSH server and client, systemd's tools, etcd, plistutil, Ansible
# (ansible-core, for make bench's head-to-head), Chromium (the desktop
# journeys drive it headless), minisign, zsh and fish (tests of release
# keys and completion scripts). Go modules
# come from the module proxy through `go mod download`.
set -euo pipefail
need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
command -v plistutil >/dev/null 2>&1 || need+=(libplist-utils)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
command -v ansible-playbook >/dev/null 2>&1 || need+=(ansible-core)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# the release keys' interop tests (the minisign tool) and the completion
# scripts' syntax checks (zsh, fish); dpkg-deb for make package's test
command -v minisign >/dev/null 2>&1 || need+=(minisign)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
command -v dpkg-deb >/dev/null 2>&1 || need+=(dpkg)
[ -x /lib/systemd/systemd ] || need+=(systemd)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing ${need[*]}; run as root to install them" >&2
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Keep package scripts from starting daemons (etcd) on the machine.
  restore=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    restore=1
  fi
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  [ -n "$restore" ] && rm -f /usr/sbin/policy-rc.d
fi
go mod download
