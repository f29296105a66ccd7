#!/bin/sh
# Two test hosts on this machine, joined by an emulated network link:
#
#   hosts.sh up WIRE_PROGRAM [--delay-ms D] [--loss P]   (prints the wire's pid)
#   hosts.sh down
#
# Each host is a network namespace (strata-h1 at 10.213.0.1, strata-h2 at
# 10.213.0.2) with its loopback and one TUN device, `wire`; the link between
# them is WIRE_PROGRAM (strata-test-wire), which carries packets with the
# given delay and loss and cuts the link on SIGUSR1. `agent.sh` starts
# commands "on" a host, as ssh would. Needs root (CAP_NET_ADMIN): exits 77
# with the reason where namespaces cannot be made.
set -eu
hosts="strata-h1 strata-h2"

down() {
  [ -f /tmp/strata-netns-wire.pid ] && kill "$(cat /tmp/strata-netns-wire.pid)" 2>/dev/null || true
  rm -f /tmp/strata-netns-wire.pid
  # Whatever still runs on a host (a daemon mpirun could not reach) goes with it.
  for h in $hosts; do
    pids=$(ip netns pids "$h" 2>/dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
    ip netns del "$h" 2>/dev/null || true
  done
}

case "${1:-}" in
down) down ;;
up)
  shift
  wire="$1"
  shift
  down
  n=1
  for h in $hosts; do
    if ! ip netns add "$h" 2>/tmp/strata-netns.err; then
      echo "cannot create network namespace $h: $(cat /tmp/strata-netns.err)" >&2
      exit 77
    fi
    ip -n "$h" link set lo up
    ip -n "$h" tuntap add dev wire mode tun
    ip -n "$h" addr add "10.213.0.$n/24" dev wire
    ip -n "$h" link set wire up
    n=$((n + 1))
  done
  "$wire" strata-h1 wire strata-h2 wire "$@" >/tmp/strata-netns-wire.out 2>&1 &
  echo $! >/tmp/strata-netns-wire.pid
  for _ in $(seq 150); do
    grep -q ready /tmp/strata-netns-wire.out 2>/dev/null && break
    sleep 0.1
  done
  grep -q ready /tmp/strata-netns-wire.out || { cat /tmp/strata-netns-wire.out >&2; down; exit 1; }
  cat /tmp/strata-netns-wire.pid
  ;;
*)
  echo "usage: hosts.sh up WIRE_PROGRAM [--delay-ms D] [--loss P] | hosts.sh down" >&2
  exit 2
  ;;
esac
