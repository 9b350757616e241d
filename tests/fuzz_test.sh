#!/bin/bash
# Runs a fuzz target for a fixed time budget over a writable copy of its
# checked-in corpus. The target is either real libFuzzer (--config=fuzz) or
# tests/fuzz_replay_main.cc; both take the same arguments.
#   fuzz_test.sh TARGET CORPUS_DIR SECONDS
set -euo pipefail
target=$1 corpus=$2 seconds=$3
work="${TEST_TMPDIR:-$(mktemp -d)}/corpus"
mkdir -p "$work"
exec "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="${TEST_UNDECLARED_OUTPUTS_DIR:-$work}/" "$work" "$corpus"
