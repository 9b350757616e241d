#!/usr/bin/env bash
# Packs what the GPU checks run into .gpu-bundle/bundle.tar.xz for a GPU
# machine that cannot build Leeway itself (the device tool's machines have
# CUDA but neither Debian's packages nor Bazel, and reach no network): the
# binaries built here (-c opt, with nvcc), the Debian shared libraries they
# load (not glibc, libstdc++ or CUDA's: the machine's own are used), UCX's
# transport modules, and the MNIST files when data/mnist exists. On the GPU
# machine, from the repository root with .gpu-bundle carried:
#   bash deploy/gpu-run.sh
#   deploy/gpu-bundle.sh        # prints the bundle's size
set -euo pipefail
cd "$(dirname "$0")/.."
tests=(kernels/codec_cuda_test kernels/gpu_test kernels/device_memory_test
  worker/device_layer_compressor_test worker/device_mlp_test)
benches=(bench/kernels_gpu_bench bench/compressor_gpu_bench bench/comm_study)
binaries=(cli/leeway coordinator/leeway-coordinator server/leeway-server worker/leeway-worker)
labels=()
for t in "${tests[@]}" "${benches[@]}" "${binaries[@]}"; do labels+=("//${t%/*}:${t##*/}"); done
bazel build -c opt "${labels[@]}" 2>&1 | grep -E "^ERROR|Build completed" || true
for t in "${tests[@]}" "${benches[@]}" "${binaries[@]}"; do
  [[ -x "bazel-bin/$t" ]] || { echo "gpu-bundle: //${t%/*}:${t##*/} did not build" >&2; exit 1; }
done
if [[ $(nm -C bazel-bin/worker/leeway-worker | grep -c "cuda::Gemm") -eq 0 ]]; then
  echo "gpu-bundle: the build has no CUDA (nvcc missing or LEEWAY_NO_CUDA set)" >&2
  exit 1
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for t in "${tests[@]}" "${benches[@]}" "${binaries[@]}"; do
  mkdir -p "$stage/bin/${t%/*}"
  cp -L "bazel-bin/$t" "$stage/bin/$t"
  ldd "bazel-bin/$t" | awk '$3 ~ /^\// {print $3}'
done | sort -u |
  grep -vE '/usr/local/cuda|/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s)\.so|ld-linux' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
ucx_modules=/usr/lib/x86_64-linux-gnu/ucx
[[ -d "$ucx_modules" ]] && cp -rL "$ucx_modules" "$stage/lib/ucx"
[[ -f data/mnist/train-images-idx3-ubyte ]] && cp -r data/mnist "$stage/mnist"
mkdir -p .gpu-bundle
tar -C "$stage" -cJf .gpu-bundle/bundle.tar.xz .
du -h .gpu-bundle/bundle.tar.xz
