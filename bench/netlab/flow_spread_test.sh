#!/bin/bash
# flow_spread without root: four real flows over loopback through
# flow_spread.py (receiver, senders, summary), the summary's arithmetic on
# a fixture, and flow_spread.sh refusing bad arguments before it needs
# root.
#   flow_spread_test.sh FLOW_SPREAD_SH FLOW_SPREAD_PY
set -euo pipefail
sh=$1
py=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(python3 -c 'import time; print(time.time() + 1)')
python3 "$py" recv "$port" 4 65536 3 "$start" 0.1 >"$dir/rounds.txt" &
receiver=$!
for i in 1 2 3 4; do python3 "$py" send 127.0.0.1 "$port" 65536 3 "$start" 0.1 & done
timeout 60 bash -c "wait $receiver" || wait "$receiver" || fail "the receiver did not finish"
wait
[ "$(wc -l <"$dir/rounds.txt")" -eq 3 ] || fail "expected 3 rounds: $(cat "$dir/rounds.txt")"
awk 'NF != 4 { exit 1 } { for (i = 1; i <= 4; ++i) if ($i <= 0 || $i > 5) exit 1 }' \
  "$dir/rounds.txt" || fail "expected 4 times in (0, 5] s a round: $(cat "$dir/rounds.txt")"
read -r mean median n < <(python3 "$py" summarize "$dir/rounds.txt" 0)
[ "$n" -eq 3 ] && awk -v m="$mean" 'BEGIN { exit !(m > 0 && m <= 1) }' ||
  fail "summary '$mean $median $n'"

printf '0.5 1.0 0.8 0.9\n1 1 1 1\n9 9 9 9\n' >"$dir/fixture.txt"
out=$(python3 "$py" summarize "$dir/fixture.txt" 1)
[ "$out" = "1.000 1.000 2" ] || fail "skipping the first round: '$out'"
out=$(python3 "$py" summarize <(printf '0.5 1.0 0.8 0.9\n1 1 1 1\n') 0)
[ "$out" = "0.750 1.000 2" ] || fail "first/last 0.5 and 1: '$out'"

"$sh" 100 >/dev/null 2>&1 && fail "a 100-byte size passed"
"$sh" --rounds 2 >/dev/null 2>&1 && fail "2 rounds passed"
"$sh" 4096x >/dev/null 2>&1 && fail "a size that is no number passed"
echo "flow_spread test passed"
