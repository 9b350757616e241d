#!/usr/bin/env bash
# The checks that need a GPU, on a machine with one that can also build
# Leeway (Debian 12 with the CUDA toolkit): installs what the build needs,
# packs the GPU tests, benchmarks and binaries (deploy/gpu-bundle.sh) and
# runs them as a machine that cannot build would (deploy/gpu-run.sh, which
# says what they are). Exits non-zero if a test fails.
set -uo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh >/dev/null || exit 1
deploy/gpu-bundle.sh || exit 1
exec deploy/gpu-run.sh
