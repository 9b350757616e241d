#!/usr/bin/env bash
# Puts the source of Debian's Abseil (the exact version of libabsl-dev, with
# Debian's patches applied) in a directory, for the ThreadSanitizer pass
# (third_party/absl_source/absl_source.bzl). Prints the directory.
#
#   deploy/fetch-absl-source.sh [DIR]   # default /var/cache/leeway/abseil
#
# apt's deb-src entries are derived from this machine's deb entries and kept
# in a private state directory: the system's apt configuration and package
# lists are left alone. Idempotent: an existing unpacked tree is reused.
set -euo pipefail

version=$(dpkg-query -W -f='${source:Version}' libabsl-dev 2>/dev/null || true)
if [ -z "$version" ]; then
  echo "fetch-absl-source: libabsl-dev is not installed (deploy/install-deps.sh)" >&2
  exit 1
fi
dir=${1:-/var/cache/leeway/abseil}
tree="$dir/abseil-$version"
if [ -f "$tree/absl/base/config.h" ]; then
  echo "$tree"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/sources.list.d" "$dir"
# deb-src twins of this machine's deb sources (deb822 and one-line forms).
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types: *deb$/Types: deb-src/' "$f" > "$work/sources.list.d/$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
  sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list > "$work/sources.list"
else
  : > "$work/sources.list"
fi
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list"
          -o "Dir::Etc::SourceParts=$work/sources.list.d"
          -o "Dir::State::Lists=$work/lists"
          -o "APT::Sandbox::User=root")
apt-get "${apt_opts[@]}" -qq update >&2
(cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "abseil=$version" >&2)
rm -rf "$tree.tmp"
dpkg-source --no-check -x "$work"/abseil_*.dsc "$tree.tmp" >&2
# Bazel 4's built-in @platforms has no wasm CPUs; those settings can never
# match here, so they become settings that never match.
perl -0pi -e 's/constraint_values = \[\s*"\@platforms\/\/cpu:wasm(32|64)",\s*\]/define_values = {"leeway_never_wasm": "1"}/g' \
  "$tree.tmp/absl/BUILD.bazel"
mv "$tree.tmp" "$tree"
echo "$tree"
