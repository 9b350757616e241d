#!/bin/bash
# Every shared library the binaries load directly (their NEEDED entries)
# comes from a Debian package that the Dockerfile's runtime stage installs,
# or from one that debian:12-slim already has. A new dependency that the
# image would lack fails here, not in a pod. Libraries of the CUDA toolkit
# (a build where nvcc exists links libcudart and libcublas) are no Debian
# package's: a CUDA base image provides them, so they are named and passed.
#   runtime_libs_test.sh Dockerfile BINARY...
set -euo pipefail
dockerfile=$1
shift
in_slim="libc6 libgcc-s1 libstdc++6"
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
listed=$(sed -n '/^# runtime packages/,/rm -rf/p' "$dockerfile" | grep -oE '^ +lib[a-z0-9.+-]+|^ +zlib1g' | tr -d ' ')
[ -n "$listed" ] || { echo "no runtime package list found in $dockerfile"; exit 1; }
missing=0
for bin in "$@"; do
  for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$("$ldconfig" -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}')
    [ -n "$path" ] || { echo "$(basename "$bin"): $lib not found on this machine"; missing=1; continue; }
    case "$(readlink -f "$path")" in
      "${CUDA_PATH:-/usr/local/cuda}"/* | /usr/local/cuda*/*)
        echo "$(basename "$bin"): $lib is the CUDA toolkit's (a CUDA base image provides it)"
        continue ;;
    esac
    pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)
    pkg=${pkg%%:*}
    if [ -z "$pkg" ]; then
      echo "$(basename "$bin"): $lib ($path) belongs to no Debian package"
      missing=1
    elif ! grep -qx "$pkg" <<<"$listed" && ! grep -qw "$pkg" <<<"$in_slim"; then
      echo "$(basename "$bin"): $lib comes from $pkg, which the runtime stage does not install"
      missing=1
    fi
  done
done
[ "$missing" -eq 0 ] && echo "the runtime stage installs every library the binaries load"
exit "$missing"
