#!/bin/bash
# A bandwidth-limited network on one machine, for communication studies:
# one network namespace per host - the coordinator, S servers, W workers -
# each with one NIC (eth0, a veth) on a switch (a bridge in a namespace of
# its own), every NIC shaped by tc to RATE in both directions with DELAY
# added to what it sends. Traffic stays inside these namespaces: the
# switch has no address and nothing connects it to the root namespace.
#
#   bench/netlab/netlab.sh up    [--prefix P] [--servers S] [--workers W] [--rate R] [--delay D]
#   bench/netlab/netlab.sh down  [--prefix P]
#   bench/netlab/netlab.sh check [--prefix P] [--rate R]   # iperf3, ucx_perftest w0 -> s0
#   bench/netlab/netlab.sh run   [up options] -- COMMAND... # up, COMMAND in P-coord, down
#
# Defaults: prefix lw, 2 servers, 4 workers, rate 1gbit, delay 0 (tc
# units: 1gbit, 10gbit, 100mbit; 100us, 1ms). Needs root (CAP_NET_ADMIN):
# ip netns, ip link and tc from iproute2, iperf3 and ucx_perftest for check. `run` and a failed `up` tear
# everything down, also on Ctrl-C.
#
# Addresses (leeway launch --netns=P uses the same): P-coord 10.77.0.1,
# server i 10.77.0.(10+i), worker i 10.77.0.(100+i), all /24 on eth0.
set -euo pipefail

prefix=lw
servers=2
workers=4
rate=1gbit
delay=0
command=()

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

action=${1:-}
[ -n "$action" ] || usage
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --) shift; command=("$@"); break ;;
    *) usage ;;
  esac
done
[ "$servers" -ge 1 ] && [ "$servers" -le 80 ] && [ "$workers" -ge 1 ] && [ "$workers" -le 150 ] ||
  { echo "netlab: 1-80 servers and 1-150 workers" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "netlab: needs root (network namespaces, tc)" >&2; exit 1; }

hosts() {  # name address
  echo "coord 10.77.0.1"
  for ((i = 0; i < servers; i++)); do echo "s$i 10.77.0.$((10 + i))"; done
  for ((i = 0; i < workers; i++)); do echo "w$i 10.77.0.$((100 + i))"; done
}

# The rate in bytes per second, from tc's notation.
rate_bytes() {
  local n=${1%%[a-zA-Z]*} unit=${1##*[0-9.]}
  case "$unit" in
    gbit) echo "$n" | awk '{printf "%d", $1 * 125000000}' ;;
    mbit) echo "$n" | awk '{printf "%d", $1 * 125000}' ;;
    kbit) echo "$n" | awk '{printf "%d", $1 * 125}' ;;
    *) echo "netlab: rate '$1' (use gbit, mbit or kbit)" >&2; exit 2 ;;
  esac
}

# Egress shaping of one device in one namespace: tbf for the rate (a
# burst of 4 ms of traffic, at least 64 KiB, so that offloaded 64 KiB
# segments pass), under netem when there is a delay.
shape() {  # namespace device
  local ns=$1 dev=$2 bytes burst
  bytes=$(rate_bytes "$rate")
  burst=$((bytes / 250))
  [ "$burst" -ge 65536 ] || burst=65536
  if [ "$delay" = 0 ]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" latency 50ms
  else
    if ! ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay" limit 100000; then
      echo "netlab: tc netem is not available in this kernel (module sch_netem): no --delay here" >&2
      return 1
    fi
    ip netns exec "$ns" tc qdisc add dev "$dev" parent 1: handle 2: tbf rate "$rate" burst "$burst" latency 50ms
  fi
}

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${prefix}-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

up() {
  if ip netns list | awk '{print $1}' | grep -qE "^${prefix}-"; then
    echo "netlab: namespaces ${prefix}-* exist; run '$0 down --prefix $prefix' first" >&2
    exit 1
  fi
  trap 'down; exit 1' ERR INT TERM
  local sw="${prefix}-sw"
  ip netns add "$sw"
  ip netns exec "$sw" ip link add br0 type bridge
  ip netns exec "$sw" ip link set br0 up
  ip netns exec "$sw" ip link set lo up
  local name address ns
  while read -r name address; do
    ns="${prefix}-${name}"
    ip netns add "$ns"
    ip link add "${prefix}-${name}" netns "$sw" type veth peer name eth0 netns "$ns"
    ip netns exec "$sw" ip link set "${prefix}-${name}" master br0 up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$address/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    shape "$ns" eth0                     # what the host sends
    shape "$sw" "${prefix}-${name}"      # what it receives
  done < <(hosts)
  trap - ERR INT TERM
  echo "netlab: ${prefix}-coord, $servers servers, $workers workers on 10.77.0.0/24, $rate each way, delay $delay"
}

# The link from w0 to s0 measured two ways: iperf3 (one TCP stream: the
# emulation itself, which must give the configured rate within 10%, less
# TCP/IP headers) and ucx_perftest over UCX's TCP transport (what Leeway's
# data plane can get from it).
check() {
  local expected
  expected=$(rate_bytes "$rate")
  ip netns exec "${prefix}-s0" iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  local tcp
  tcp=$(ip netns exec "${prefix}-w0" timeout 60 iperf3 -c 10.77.0.10 -p 5201 -t 5 -f m 2>&1 |
        awk '/receiver/ {print $7}')
  wait "$server" 2>/dev/null || true
  local env=(env UCX_TLS=tcp UCX_NET_DEVICES=eth0 UCX_WARN_UNUSED_ENV_VARS=n)
  ip netns exec "${prefix}-s0" "${env[@]}" ucx_perftest -p 13377 >/dev/null 2>&1 &
  server=$!
  sleep 1
  local ucx
  ucx=$(ip netns exec "${prefix}-w0" "${env[@]}" timeout 120 ucx_perftest 10.77.0.10 -p 13377 \
        -t ucp_am_bw -s 1048576 -n 300 -w 20 -O 8 2>&1 | awk '/Final:/ {print $6}')
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  if [ -z "$tcp" ] || [ -z "$ucx" ]; then
    echo "netlab check: no result (iperf3 '$tcp', ucx_perftest '$ucx')" >&2
    exit 1
  fi
  awk -v tcp="$tcp" -v ucx="$ucx" -v e="$expected" -v r="$rate" 'BEGIN {
    tcp_ratio = tcp * 1e6 / 8 / e
    ucx_ratio = ucx * 1048576 / e
    printf "netlab check: configured %s = %.1f MB/s (10^6 B) each way\n", r, e / 1e6
    printf "  iperf3 TCP w0 -> s0:             %7.1f MB/s  %.3f of configured\n", tcp * 1e6 / 8 / 1e6, tcp_ratio
    printf "  ucx_perftest am_bw 1 MiB, tcp:   %7.1f MB/s  %.3f of configured\n", ucx * 1048576 / 1e6, ucx_ratio
    exit (tcp_ratio >= 0.9 && tcp_ratio <= 1.1) ? 0 : 1 }'
}

case "$action" in
  up) up ;;
  down) down ;;
  check) check ;;
  run)
    [ ${#command[@]} -gt 0 ] || usage
    up
    trap 'down' EXIT
    trap 'exit 130' INT TERM
    ip netns exec "${prefix}-coord" "${command[@]}"
    ;;
  *) usage ;;
esac
