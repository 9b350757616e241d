#!/bin/bash
# The main job on a fresh Debian 12 machine: a local Leeway cluster trains
# the MNIST MLP end to end - a coordinator, 2 parameter servers and 4
# workers on this machine, SSP with s = 2 and adaptive compression - and
# prints the summary; extra arguments go to `leeway launch`.
#   deploy/quickstart.sh [leeway launch flags...]
# Installs what it needs (Debian packages, the MNIST files), builds, runs.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
deploy/fetch-mnist.sh data/mnist
bazel build -c opt //cli:leeway //coordinator:leeway-coordinator //server:leeway-server \
  //worker:leeway-worker
bazel-bin/cli/leeway launch --servers=2 --workers=4 --staleness=2 --compression=adaptive \
  --data-dir=data/mnist --plot=leeway-mnist.svg "$@"
