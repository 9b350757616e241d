#!/usr/bin/env bash
# The checks that need a GPU, as one script for a machine that has one
# (the device tool's runs): the CUDA parity tests (codecs, device memory,
# the worker's device compressor; the end-to-end device run when
# data/mnist is there), the GPU codec and worker compression benchmarks
# (against a device-to-device copy), and ResNet-50's profile
# on loopback with gradients in host and then in device memory (SSP 2,
# adaptive compression, top-k pulls), whose comm_share figures compare
# compression on the CPU with compression on the GPU.
# Prints the test summary, the benchmark table and one JSON summary per
# profile run; exits non-zero if a test fails.
set -uo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh >/dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
targets=(//kernels:codec_cuda_test //kernels:gpu_test //kernels:device_memory_test
  //worker:device_layer_compressor_test //worker:device_mlp_test)
args=()
if [[ -f data/mnist/train-images-idx3-ubyte ]]; then
  targets+=(//tests:e2e_test)
  args=(--test_env=LEEWAY_MNIST_DIR="$PWD/data/mnist"
    "--test_arg=runs with gradients in GPU memory compress on the device and learn MNIST")
fi
bazel test -c opt --test_output=all "${args[@]}" "${targets[@]}" 2>&1 |
  grep -E "PASSED|FAILED|skipped|test cases|assertions|kernels run on|leeway launch"
status=${PIPESTATUS[0]}
bazel run -c opt //bench:kernels_gpu_bench -- --sizes=1048576,16777216,67108864 2>/dev/null
bazel run -c opt //bench:compressor_gpu_bench -- --sizes=1048576,16777216 2>/dev/null
bazel build -c opt //cli:leeway //coordinator:leeway-coordinator //server:leeway-server \
  //worker:leeway-worker >/dev/null 2>&1 || exit 1
for gradients in host device; do
  echo "resnet50 profile, gradients in $gradients memory:"
  bazel-bin/cli/leeway launch --profile=resnet50 --gpu-ms=100 --staleness=2 \
    --compression=adaptive --pull-density=0.01 --clocks=30 --warmup-clocks=5 \
    --gradients="$gradients" --run-dir="/tmp/gpu-check-$gradients" -o json 2>&1 | tail -1
done
exit "$status"
