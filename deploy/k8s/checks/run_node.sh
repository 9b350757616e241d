#!/bin/bash
# Runs one of the manifest checks under Node with the npm modules that
# deploy/k8s/package.json pins (deploy/test.sh installs them with `npm ci`
# and passes their folder in LEEWAY_K8S_NODE_MODULES).
#   run_node.sh validate.js|policy.js|smoke.js [args...]
set -euo pipefail
modules=${LEEWAY_K8S_NODE_MODULES:-}
if [ -z "$modules" ] || [ ! -d "$modules/kubernetes-models" ]; then
  echo "run_node.sh: set LEEWAY_K8S_NODE_MODULES to deploy/k8s/node_modules after" \
    "'npm ci' in deploy/k8s (deploy/test.sh does both)" >&2
  exit 1
fi
command -v node >/dev/null || { echo "run_node.sh: node not found (deploy/install-deps.sh installs it)" >&2; exit 1; }
script=$1
shift
# Under bazel test, $0 is a link named after the target: follow it.
NODE_PATH=$modules exec node "$(dirname "$(readlink -f "$0")")/$script" "$@"
