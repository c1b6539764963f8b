#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The build accepts the build types distributions pass (None, empty), builds no tests and no
# -Werror outside a developer build, takes the unit and udev directories from systemd's and
# udev's pkg-config files relative to the install prefix, and finds another OpenSM's headers
# through CMAKE_PREFIX_PATH.
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# configure NAME ARGS...: a configure-only run; the cache is left in $work/NAME.
configure() {
    local name=$1
    shift
    cmake -S "$src" -B "$work/$name" -G Ninja "$@" >"$work/$name.log" 2>&1 ||
        { cat "$work/$name.log"; fail "configure $name ($*)"; }
}
cached() { sed -n "s/^$2:[A-Z]*=//p" "$work/$1/CMakeCache.txt"; }
expect() {
    local got
    got=$(cached "$1" "$2")
    [ "$got" = "$3" ] || fail "$1: $2 is '$got', expected '$3'"
}

configure none -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/opt/rq
expect none CMAKE_BUILD_TYPE None
expect none RDMA_QOS_BUILD_TESTS OFF
expect none RDMA_QOS_BUILD_BENCH OFF
expect none RDMA_QOS_WERROR OFF
# Another prefix: the same directories under it, never /lib of the running system.
expect none RDMA_QOS_SYSTEMD_UNITDIR /opt/rq/lib/systemd/system
expect none RDMA_QOS_UDEVDIR /opt/rq/lib/udev

configure empty -DCMAKE_BUILD_TYPE= -DCMAKE_INSTALL_PREFIX=/usr
expect empty CMAKE_BUILD_TYPE Release
# The prefix systemd and udev were built for: their directories as they name them.
expect empty RDMA_QOS_SYSTEMD_UNITDIR "$(pkg-config --variable=systemdsystemunitdir systemd)"
expect empty RDMA_QOS_UDEVDIR "$(pkg-config --variable=udevdir udev)"

configure dev -DCMAKE_BUILD_TYPE=Release -DRDMA_QOS_DEVELOPER=ON
expect dev RDMA_QOS_BUILD_TESTS ON
expect dev RDMA_QOS_BUILD_BENCH ON
expect dev RDMA_QOS_WERROR ON

# Another OpenSM build's headers and libraries, installed under their own prefix (here links to
# this machine's libopensm-dev): CMAKE_PREFIX_PATH finds them before the system's.
osm_header=$(ls /usr/include/infiniband/opensm/osm_event_plugin.h 2>/dev/null || true)
osm_lib=$(ls /usr/lib/*/libopensm.so 2>/dev/null | head -n1 || true)
if [ -n "$osm_header" ] && [ -n "$osm_lib" ]; then
    prefix=$work/opensm-prefix
    mkdir -p "$prefix/include/infiniband" "$prefix/lib"
    ln -s /usr/include/infiniband/opensm "$prefix/include/infiniband/opensm"
    ln -s /usr/include/infiniband/complib "$prefix/include/infiniband/complib"
    ln -s /usr/include/infiniband/vendor "$prefix/include/infiniband/vendor"
    ln -s /usr/include/infiniband/iba "$prefix/include/infiniband/iba"
    for lib in opensm osmcomp osmvendor; do
        ln -s "$(dirname "$osm_lib")/lib$lib.so" "$prefix/lib/lib$lib.so"
    done
    configure osm -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$prefix"
    expect osm OPENSM_INCLUDE_DIR "$prefix/include/infiniband"
    expect osm OPENSM_LIBRARY "$prefix/lib/libopensm.so"
    expect osm OSMVENDOR_LIBRARY "$prefix/lib/libosmvendor.so"
fi

if cmake -S "$src" -B "$work/bad" -G Ninja -DCMAKE_BUILD_TYPE=Fast >"$work/bad.log" 2>&1; then
    fail "an unknown build type was accepted"
fi
grep -q "CMAKE_BUILD_TYPE must be one of" "$work/bad.log" || fail "unknown build type message"
echo "PASS"
