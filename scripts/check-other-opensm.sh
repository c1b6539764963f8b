#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The rdma-qos OpenSM plugin against another OpenSM than the one Debian ships: builds that OpenSM
# from its source tree (an upstream release, or a site's or vendor's build of it) into a private
# prefix, builds the plugin against its headers and libraries (CMAKE_PREFIX_PATH), and runs the
# plugin's ibsim tests with that OpenSM as the SM. OpenSM loads a plugin only when the plugin was
# built against its very version string, so every OpenSM build needs its own plugin build: this
# is the check deployment.md ("Other OpenSM builds") asks for. Not part of CI, which has only
# Debian's OpenSM.
#
# Usage: scripts/check-other-opensm.sh --source DIR [--work DIR] [--tests REGEX] [--jobs N]
#   --source DIR   OpenSM's source tree (a git checkout or a release tarball, unpacked); it is
#                  copied, never written
#   --work DIR     where OpenSM, the plugin build and the logs go (default: a new directory
#                  under ${TMPDIR:-/tmp})
#   --tests REGEX  the ctest names to run (default: the plugin inside OpenSM, on a live fabric,
#                  its answer threads and the routing matrix's ring under lash, dfsssp and updn)
#   --jobs N       parallel jobs (default: the number of CPUs)
# Needs autoconf, automake, libtool, libtool-bin, flex and bison besides the project's own
# build dependencies (scripts/install-deps.sh). Exit status: 0 when every test passed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source_dir="" work="" jobs=$(nproc)
tests='^opensm-plugin\.(PluginInOpenSm|PluginOnALiveFabric|Threads/PluginAnswerThreads)\.|^opensm-plugin\.routing\.ring6_(lash|dfsssp|updn)$'

usage() { sed -n '3,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
        --source) source_dir=${2:?--source needs a directory}; shift 2 ;;
        --work) work=${2:?--work needs a directory}; shift 2 ;;
        --tests) tests=${2:?--tests needs a regular expression}; shift 2 ;;
        --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "check-other-opensm: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
[ -n "$source_dir" ] || { echo "check-other-opensm: --source DIR is required (--help)" >&2; exit 2; }
[ -f "$source_dir/configure.ac" ] || {
    echo "check-other-opensm: $source_dir has no configure.ac: not an OpenSM source tree" >&2
    exit 2
}
missing=""
for tool in autoreconf libtool libtoolize flex bison make cmake ninja; do
    command -v "$tool" >/dev/null || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    echo "check-other-opensm: missing:$missing (apt-get install autoconf automake libtool libtool-bin flex bison)" >&2
    exit 2
fi
work=${work:-$(mktemp -d "${TMPDIR:-/tmp}/rdma-qos-other-opensm.XXXXXX")}
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix="$work/opensm"

if [ -x "$prefix/sbin/opensm" ]; then
    echo "== OpenSM already built in $prefix (remove it to build it again)"
else
echo "== OpenSM from $source_dir into $prefix (log: $work/opensm-build.log)"
rm -rf "$work/src"
cp -a "$source_dir" "$work/src"
# Each step checked: errexit does not hold inside a command whose failure is handled.
build_opensm() {
    cd "$work/src" || return 1
    if [ -x ./autogen.sh ]; then ./autogen.sh || return 1; else autoreconf -fi || return 1; fi
    # libtool gives the installed programs an RPATH into the prefix, so this OpenSM loads its
    # own libraries, not Debian's, whatever LD_LIBRARY_PATH a test sets.
    ./configure --prefix="$prefix" || return 1
    make -j "$jobs" || return 1
    make install
}
(build_opensm) >"$work/opensm-build.log" 2>&1 || { tail -40 "$work/opensm-build.log"; exit 1; }
fi
version_header=$(find "$prefix/include" -name osm_version.h | head -1)
osm_version=$(sed -n 's/^#define OSM_VERSION "\(.*\)"/\1/p' "$version_header")
echo "   built: $osm_version ($prefix/sbin/opensm)"

echo "== the plugin against it (log: $work/plugin-build.log)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$repo" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRDMA_QOS_DEVELOPER=ON \
      -DRDMA_QOS_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" \
      >"$work/plugin-build.log" 2>&1 || { tail -40 "$work/plugin-build.log"; exit 1; }
include_dir=$(sed -n 's/^OPENSM_INCLUDE_DIR:PATH=//p' "$work/build/CMakeCache.txt")
case "$include_dir" in
    "$prefix"/*) echo "   OpenSM's headers: $include_dir" ;;
    *) echo "check-other-opensm: the build found OpenSM's headers at '$include_dir', not under $prefix" >&2
       exit 1 ;;
esac
targets=(rdma-qos-opensm opensm_plugin_opensm_tests opensm_plugin_routing_tests)
cmake --build "$work/build" -j "$jobs" --target "${targets[@]}" >>"$work/plugin-build.log" 2>&1 ||
    { tail -40 "$work/plugin-build.log"; exit 1; }
plugin=$(find "$work/build" -name 'librdma-qos-opensm.so' | head -1)
if ! grep -aq "$osm_version" "$plugin"; then
    echo "check-other-opensm: $plugin does not carry the version string '$osm_version'" >&2
    exit 1
fi
echo "   $plugin, built against $osm_version"

echo "== the plugin's ibsim tests with $osm_version as the SM"
export PATH="$prefix/sbin:$prefix/bin:$PATH"
# The test bed starts `opensm` from PATH. OpenSM refuses a plugin built against another version
# string, so a test that passes ran this OpenSM with this plugin.
[ "$(command -v opensm)" = "$prefix/sbin/opensm" ] ||
    { echo "check-other-opensm: opensm on PATH is $(command -v opensm)" >&2; exit 1; }
status=0
ctest --test-dir "$work/build" -R "$tests" -j "$jobs" --output-on-failure --timeout 600 || status=1
echo "== $osm_version: $([ "$status" -eq 0 ] && echo "every test passed" || echo "FAILED")"
exit "$status"
