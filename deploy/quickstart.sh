#!/bin/bash
# The main job on one machine: installs what it needs, builds, and runs a
# local cluster. Until the worker and server roles land (issues 4-6) the
# cluster is the data plane on its own: one server process and four client
# processes, two connected over TCP (listener) and two over shared memory
# (worker address), each exchanging 10,000 checksummed messages of mixed
# sizes with the server.
#   deploy/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
bazel build -c opt //tests:transport_peer
peer=bazel-bin/tests/transport_peer
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
"$peer" serve --ready_file="$dir/server.ready" --token=quickstart >"$dir/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -f "$dir/server.ready" ] && break; sleep 0.1; done
[ -f "$dir/server.ready" ] || { cat "$dir/server.log"; exit 1; }
echo "server up (pid $server); starting 4 clients"
pids=()
for i in 1 2 3 4; do
  via=sockaddr
  [ "$i" -gt 2 ] && via=address
  "$peer" client --server_file="$dir/server.ready" --via=$via --seed=$i \
    --token=quickstart >"$dir/client$i.log" 2>&1 &
  pids+=($!)
done
status=0
for i in 1 2 3 4; do
  start=$(date +%s.%N)
  if wait "${pids[$((i - 1))]}"; then result=ok; else result=FAILED; status=1; fi
  transport=$(grep -oE 'connected, transport [^ ]+' "$dir/client$i.log" | awk '{print $3}')
  echo "client $i: $result via ${transport:-?}: $(grep CLIENT "$dir/client$i.log" || tail -3 "$dir/client$i.log")"
done
kill -TERM "$server"
wait "$server" || true
grep STATS "$dir/server.log"
exit $status
