#!/usr/bin/env bash
# The checks that need a GPU, as one script for a machine that has one
# (the device tool's runs): the CUDA parity tests and the GPU benchmark.
# Prints the test summary and the benchmark table; exits non-zero if a
# test fails.
set -uo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
bazel test --test_output=all //kernels:codec_cuda_test //kernels:gpu_test 2>&1 |
  grep -E "PASSED|FAILED|skipped|test cases|assertions|kernels run on" 
status=${PIPESTATUS[0]}
bazel run -c opt //bench:kernels_gpu_bench -- --sizes=1048576,16777216,67108864 2>/dev/null
exit "$status"
