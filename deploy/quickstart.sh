#!/bin/bash
# The main job on one machine: installs what it needs, builds, and runs a
# local cluster. Until the worker runtime lands (issue 6, `leeway launch`
# training the MNIST MLP) the cluster is the system without its trainer: a
# coordinator, a parameter server registered with it, and four test
# workers (two over TCP, two over shared memory) running 500 clocks of SSP
# (s = 2) against the server, every update a known value so that each
# worker checks what every pull includes and the exact final parameters.
# Then the admin CLI shows the cluster and its staleness.
#   deploy/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
bazel build -c opt //coordinator:leeway-coordinator //server:leeway-server \
  //tests:ps_worker //cli:leeway
bin=bazel-bin
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n UCX_LOG_LEVEL=error
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"

wait_for() {  # file, log
  for _ in $(seq 200); do [ -f "$1" ] && return 0; sleep 0.1; done
  cat "$2"
  exit 1
}

"$bin/coordinator/leeway-coordinator" --listen=127.0.0.1:0 --token_file="$dir/token" \
  --workers=4 --servers=1 --staleness=2 --heartbeat_interval_ms=200 \
  --metrics_port=-1 --ready_file="$dir/coordinator.ready" >"$dir/coordinator.log" 2>&1 &
wait_for "$dir/coordinator.ready" "$dir/coordinator.log"
coordinator=127.0.0.1:$(head -1 "$dir/coordinator.ready")
echo "coordinator on $coordinator"

"$bin/server/leeway-server" --listen=127.0.0.1:0 --token_file="$dir/token" \
  --coordinator="$coordinator" --advertise_host=127.0.0.1 --learning_rate=1 \
  --checkpoint_dir="$dir/checkpoints" --checkpoint_interval=5 --metrics_port=0 \
  --ready_file="$dir/server.ready" >"$dir/server.log" 2>&1 &
server=$!
wait_for "$dir/server.ready" "$dir/server.log"
echo "server registered; metrics on port $(sed -n 3p "$dir/server.ready"); starting 4 workers"

pids=()
for rank in 0 1 2 3; do
  via=sockaddr
  [ "$rank" -gt 1 ] && via=address
  "$bin/tests/ps_worker" --server_file="$dir/server.ready" --via=$via --rank=$rank \
    --token="$(cat "$dir/token")" --coordinator="$coordinator" \
    --clocks=500 --staleness=2 --workers=4 \
    >"$dir/worker$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for rank in 0 1 2 3; do
  if wait "${pids[$rank]}"; then result=ok; else result=FAILED; status=1; fi
  transport=$(grep -oE 'connected over [^ ]+' "$dir/worker$rank.log" | awk '{print $3}')
  echo "worker $rank: $result via ${transport:-?}: $(grep WORKER "$dir/worker$rank.log" || tail -3 "$dir/worker$rank.log")"
done

sleep 1.5  # one stats report from the server to the coordinator
leeway() { "$bin/cli/leeway" --coordinator="$coordinator" --token-file="$dir/token" "$@"; }
leeway status
leeway staleness | head -12
kill -TERM "$server"
wait "$server" || true
grep STATS "$dir/server.log"
exit $status
