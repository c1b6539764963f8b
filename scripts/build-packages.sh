#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Builds the Debian packages from the working tree (tracked files, as they are now) in a
# scratch copy under OUTDIR, so nothing is written next to the checkout, and checks them with
# lintian.
#   scripts/build-packages.sh [OUTDIR]    (default build/debian)
# OUTDIR receives the .deb files, the .changes/.buildinfo and lintian.log. Environment: JOBS
# (default 2).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-$top/build/debian}" && cd "${1:-$top/build/debian}" && pwd)
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
# The same scratch path every time: the compiler's -ffile-prefix-map names it, so only a stable
# path lets ccache serve a rebuild of unchanged sources.
work=$out/.scratch
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
src="$work/rdma-qos-$version"
mkdir -p "$src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
    tar --null -T - -c 2>/dev/null) | tar -x -C "$src"
echo "build-packages.sh: building rdma-qos $version in $src"

(cd "$src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-2} ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) || {
    tail -60 "$work/build.log"
    echo "build-packages.sh: dpkg-buildpackage failed" >&2
    exit 1
}
rm -f "$out"/*.deb
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
cp "$work/build.log" "$out/build.log"
# lintian: errors fail the build of the packages; warnings are listed.
status=0
lintian --fail-on error "$out"/*.changes >"$out/lintian.log" 2>&1 || status=$?
cat "$out/lintian.log"
ls "$out"/*.deb
exit "$status"
