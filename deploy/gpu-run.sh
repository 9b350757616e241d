#!/usr/bin/env bash
# The GPU checks, on a GPU machine, from the bundle deploy/gpu-bundle.sh
# made (.gpu-bundle/bundle.tar.xz, carried): the CUDA parity tests (codecs,
# device memory, the worker's device compressor, the cuBLAS MLP), the GPU
# benchmarks (each against a device-to-device copy), and leeway launch
# with gradients in device memory: the ResNet-50 profile with host and then
# device gradients (SSP 2, adaptive compression, top-k pulls; comm_share
# compares compression on the CPU with compression on the GPU) and, when
# the bundle holds MNIST, the MLP on cuBLAS; then, where root may build
# network namespaces, the 1 Gbit/s study's BSP baseline and Leeway's
# configuration with device gradients. Prints each part's output;
# exits non-zero if a test fails. Writes logs to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
tar -C "$root" -xJf .gpu-bundle/bundle.tar.xz || exit 1
out=${OUT:-$root/out}
mkdir -p "$out" "$root/runs"
# CUDA's runtime and cuBLAS: the toolkit's, or the Python wheels'.
cublas=$(find /usr/local /usr/lib /opt -name 'libcublas.so.13*' 2>/dev/null | head -1)
cudart=$(find /usr/local /usr/lib /opt -name 'libcudart.so.13*' 2>/dev/null | head -1)
cuda_libs="${cublas%/*}:${cudart%/*}"
export LD_LIBRARY_PATH="$root/lib:$cuda_libs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export UCX_MODULE_DIR="$root/lib/ucx"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
status=0
for t in "$root"/bin/*/*_test; do
  echo "=== ${t#"$root"/bin/}"
  "$t" >"$out/${t##*/}.log" 2>&1
  rc=$?
  grep -E "test cases|assertions|skipped|FAILED|kernels run on" "$out/${t##*/}.log" | head -20
  [[ $rc -eq 0 ]] || status=1
done
echo "=== kernels_gpu_bench"
"$root/bin/bench/kernels_gpu_bench" --sizes=1048576,16777216,67108864 2>/dev/null
echo "=== compressor_gpu_bench"
"$root/bin/bench/compressor_gpu_bench" --sizes=1048576,16777216 2>/dev/null
launch() {
  timeout 300 "$root/bin/cli/leeway" launch --bin-dir="$root/bin/cli" -o json "$@" 2>&1 | tail -1
}
for gradients in host device; do
  echo "=== resnet50 profile, gradients in $gradients memory"
  launch --profile=resnet50 --gpu-ms=100 --staleness=2 --compression=adaptive \
    --pull-density=0.01 --clocks=30 --warmup-clocks=5 --gradients="$gradients" \
    --run-dir="$root/runs/resnet50-$gradients"
done
if [[ -d "$root/mnist" ]]; then
  echo "=== MNIST, SSP 2 adaptive, the MLP on cuBLAS"
  launch --staleness=2 --compression=adaptive --clocks=1000 --gradients=device \
    --data-dir="$root/mnist" --run-dir="$root/runs/mnist-device"
fi
# The 1 Gbit/s study's headline pair, where the machine lets root build
# network namespaces (bench/netlab); its failure does not fail the checks.
if command -v ip >/dev/null && command -v tc >/dev/null && [[ $(id -u) -eq 0 ]]; then
  echo "=== netlab 1 Gbit/s, ResNet-50, gradients in device memory"
  timeout 240 bench/netlab/netlab.sh run --rate 1gbit -- "$root/bin/bench/comm_study" \
    --netns=lw --bin_dir="$root/bin" --work_dir="$root/study" --workload=resnet50 \
    --gpu_ms=100 --clocks=16 --configs=bsp-none,ssp2-adaptive+pulls --speeds=equal \
    --overlap=on --gradients=device >"$root/study.log" 2>&1
  grep -E "^equal|^\|" "$root/study.log" | tail -12 || tail -8 "$root/study.log"
else
  echo "=== netlab skipped: needs root, ip and tc"
fi
exit "$status"
