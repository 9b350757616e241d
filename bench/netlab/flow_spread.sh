#!/bin/bash
# How fairly TCP shares a shaped link, for the iteration model's unfair
# links (leeway-sim --validate --flow_spreads): four workers send SIZE
# bytes each to one server at the same instant, over connections kept open
# between rounds (as UCX keeps its endpoints), and the server notes when
# each is through. Per size it prints the mean and median over rounds of
# (first through) / (last through), 1 for perfectly fair sharing, and at
# the end the --flow_spreads value for leeway-sim. The first two rounds
# (TCP's slow start) are left out.
#
#   bench/netlab/flow_spread.sh [--rate R] [--rounds N] [SIZE...]
#
# Defaults: 1gbit, 20 rounds, sizes 1 MiB, 4 MiB, 16 MiB. Needs root (it
# brings up netlab: 1 server, 4 workers) and python3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
rate=1gbit
rounds=20
sizes=()
inside=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --inside) inside=1; shift ;;  # internal: run by netlab.sh in its namespaces
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) sizes+=("$1"); shift ;;
  esac
done

if [ "$inside" = 1 ]; then
  # Inside netlab's namespaces: one measurement per size.
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  spreads=""
  for size in "${sizes[@]}"; do
    # A round lasts what four flows need at 100 MB/s, plus slack.
    period=$(python3 -c "print(round(4 * $size / 100e6 + 0.15, 3))")
    start=$(python3 -c "import time; print(time.time() + 2)")
    ip netns exec lw-s0 python3 "$here/flow_spread.py" recv 7100 4 "$size" "$rounds" "$start" \
      "$period" >"$out/$size.txt" &
    receiver=$!
    sleep 0.5
    senders=()
    for i in 0 1 2 3; do
      ip netns exec "lw-w$i" python3 "$here/flow_spread.py" send 10.77.0.10 7100 "$size" \
        "$rounds" "$start" "$period" &
      senders+=($!)
    done
    for p in "${senders[@]}"; do wait "$p"; done
    wait "$receiver"
    read -r mean median n < <(python3 "$here/flow_spread.py" summarize "$out/$size.txt" 2)
    printf "%10d bytes: first/last through, mean %s, median %s (%d rounds)\n" "$size" "$mean" "$median" "$n"
    spreads+="${spreads:+,}$size:$mean"
  done
  echo "leeway-sim --flow_spreads=$spreads"
  exit 0
fi

[ ${#sizes[@]} -gt 0 ] || sizes=(1048576 4194304 16777216)
for s in "${sizes[@]}"; do
  [[ "$s" =~ ^[0-9]+$ ]] && [ "$s" -ge 1024 ] || { echo "flow_spread: sizes are byte counts >= 1024" >&2; exit 2; }
done
[[ "$rounds" =~ ^[0-9]+$ ]] && [ "$rounds" -ge 3 ] || { echo "flow_spread: --rounds >= 3" >&2; exit 2; }
exec "$here/netlab.sh" run --rate "$rate" --servers 1 --workers 4 -- \
  "$here/flow_spread.sh" --inside --rounds "$rounds" "${sizes[@]}"
