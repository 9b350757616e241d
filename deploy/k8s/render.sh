#!/bin/bash
# Renders every overlay with `kubectl kustomize` into rendered/<overlay>.yaml,
# the files the validation, policy and smoke tests read (CI machines without
# kubectl test those). After changing base/ or overlays/, run
#   deploy/k8s/render.sh
# and commit rendered/. With --check it only compares, and exits 1 naming the
# overlay whose rendered file is stale; without kubectl it says so, exit 0.
set -euo pipefail
# Under bazel test, $0 is a link in the runfiles; kustomize wants the real tree.
cd "$(dirname "$(readlink -f "$0")")"
check=0
[ "${1:-}" = "--check" ] && check=1
if ! command -v kubectl >/dev/null; then
  echo "render.sh: kubectl not found; rendered/ not compared with the sources"
  exit 0
fi
mkdir -p rendered
stale=0
for dir in overlays/*/; do
  name=$(basename "$dir")
  out=$(mktemp)
  {
    echo "# Rendered by deploy/k8s/render.sh from overlays/$name; do not edit."
    kubectl kustomize "$dir"
  } >"$out"
  if [ "$check" -eq 1 ]; then
    if ! cmp -s "$out" "rendered/$name.yaml"; then
      echo "rendered/$name.yaml is stale: run deploy/k8s/render.sh"
      diff -u "rendered/$name.yaml" "$out" | head -40 || true
      stale=1
    fi
    rm -f "$out"
  else
    mv "$out" "rendered/$name.yaml"
    echo "rendered/$name.yaml"
  fi
done
[ "$check" -eq 1 ] && [ "$stale" -eq 0 ] && echo "rendered/ matches base/ and overlays/"
exit "$stale"
