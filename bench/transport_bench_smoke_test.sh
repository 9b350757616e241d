#!/bin/bash
# transport_bench end to end at a tiny size, without its baselines (CI has
# no quiet cores to compare on): both transports must print a row with
# pushes and round trips, and a push-only run dashes for the round trips.
#   transport_bench_smoke_test.sh TRANSPORT_BENCH
set -euo pipefail
bench=$1
common=(--sizes=4096 --repeats=1 --bytes_per_run=1048576 --baseline=false --cpus=none)
out=$("$bench" --tls=tcp,sm "${common[@]}" 2>&1)
echo "$out"
for tls in tcp sm; do
  line=$(grep -m1 -E "^\| $tls \| 4 KiB \|" <<<"$out") || { echo "FAIL: no $tls row"; exit 1; }
  # push MB/s, push msg/s and round trips/s: numbers above zero.
  awk -F'|' '{ exit !($4 > 0 && $5 > 0 && $10 > 0) }' <<<"$line" ||
    { echo "FAIL: $tls row without pushes or round trips: $line"; exit 1; }
done
out=$("$bench" --tls=sm --round_trips=false "${common[@]}" 2>&1)
echo "$out"
line=$(grep -m1 -E "^\| sm \| 4 KiB \|" <<<"$out") || { echo "FAIL: no push-only row"; exit 1; }
awk -F'|' '{ gsub(/ /, "", $10); exit !($5 > 0 && $10 == "-") }' <<<"$line" ||
  { echo "FAIL: push-only row: $line"; exit 1; }
"$bench" --tls=sm "${common[@]}" --sizes=0 >/dev/null 2>&1 && { echo "FAIL: size 0 passed"; exit 1; }
echo "transport_bench smoke test passed"
