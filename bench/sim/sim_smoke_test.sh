#!/bin/bash
# leeway-sim end to end: validates against the checked-in ResNet-50 study
# (the calibration row, BSP top-k, must come back to within 1%, and at
# least four fifths of the predictions within 15%, BSP uncompressed among
# them: a model change that loses the fit fails here; the table predates
# the servers' shared replies; 3 seeds a row instead of 9, for time), then
# a small projection.
#   sim_smoke_test.sh LEEWAY_SIM STUDY.md
set -euo pipefail
sim=$1
study=$2
out=$("$sim" --validate="$study" --reused_replies=false --seeds=3)
echo "$out"
for config in bsp-topk; do
  # The validation table's row (the GPU-encode table below repeats the names).
  line=$(grep -m1 -E "^\| equal \| $config \| on \|" <<<"$out")
  error=$(awk -F'|' '{gsub(/[ +%]|\(calibration\)/, "", $7); print $7}' <<<"$line")
  awk -v e="$error" 'BEGIN { exit !(e <= 1 && e >= -1) }' || { echo "FAIL: $config calibration error $error%"; exit 1; }
done
within=$(sed -n 's/^\([0-9]*\) of [0-9]* predictions within 15%.*/\1/p' <<<"$out")
predictions=$(sed -n 's/^[0-9]* of \([0-9]*\) predictions within 15%.*/\1/p' <<<"$out")
[ -n "$within" ] && [ "$predictions" -ge 20 ] && [ $((5 * within)) -ge $((4 * predictions)) ] ||
  { echo "FAIL: only '$within' of '$predictions' predictions within 15%"; exit 1; }
grep -q "^The same runs with the encode on the GPU" <<<"$out" || { echo "FAIL: no GPU-encode table"; exit 1; }
grep -q "| measured staleness p99 | predicted |" <<<"$out" || { echo "FAIL: no staleness columns"; exit 1; }
"$sim" --validate="$study" --flow_spreads=4194304:2 >/dev/null 2>&1 && { echo "FAIL: a bad --flow_spreads passed"; exit 1; }
proj=$("$sim" --project --workers=8 --servers=1,8 --gbps=100 --clocks=4)
echo "$proj"
[ "$(grep -c '^| 100 | 8 |' <<<"$proj")" -eq 8 ] || { echo "FAIL: expected 8 projection rows (2 server counts x 4 configurations)"; exit 1; }
"$sim" --validate=/nonexistent.md >/dev/null 2>&1 && { echo "FAIL: a missing table passed"; exit 1; }
echo "leeway-sim smoke test passed"
