#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# dpkg-buildpackage builds the seven packages from debian/, lintian reports no error, and each
# package holds what an administrator expects of it.
set -euo pipefail
src=$1
out=$2
fail() { echo "FAIL: $*"; exit 1; }
# The packages are built unoptimised, without debug info (noopt, no -g, no dbgsym packages) and
# by clang where it is installed: what is checked here is the packaging (files, Depends, symbols,
# lintian, the units under systemd), which neither the flags nor the compiler change, and clang
# compiles the unoptimised tree in two thirds of gcc's time (gcc compiles build/release). Debian's
# gcc links --as-needed and its clang does not, so clang is given the flag: the packages then
# depend on the same libraries (only libgcc-s1's minimum version can differ, the compiler's own
# runtime). RDMA_QOS_PACKAGES_AS_SHIPPED=1 builds them with Debian's own compiler and flags, as
# scripts/build-packages.sh does by default.
if [ "${RDMA_QOS_PACKAGES_AS_SHIPPED:-0}" = 1 ]; then
    "$src/scripts/build-packages.sh" "$out" || fail "build-packages.sh"
else
    compilers=()
    if command -v clang >/dev/null && command -v clang++ >/dev/null; then
        compilers=(CC=clang CXX=clang++ "DEB_LDFLAGS_APPEND=-Wl,--as-needed ${DEB_LDFLAGS_APPEND:-}")
    fi
    env "${compilers[@]}" DEB_BUILD_OPTIONS="noopt noddebs ${DEB_BUILD_OPTIONS:-}" \
        DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g \
        "$src/scripts/build-packages.sh" "$out" || fail "build-packages.sh"
fi
has() {  # has PACKAGE PATH...: the package's file list holds each path
    local pkg=$1 deb list
    shift
    deb=$(ls "$out/${pkg}"_*.deb) || fail "no $pkg package"
    list=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\.||')
    for p in "$@"; do
        grep -qx -- "$p" <<<"$list" || fail "$pkg lacks $p"
    done
}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has rdma-qos /usr/bin/rdma-qos /usr/sbin/rdma-qos-sad /usr/sbin/rdma-qos-lsd \
    /lib/systemd/system/rdma-qos-lsd.socket /lib/systemd/system/rdma-qos-paths.socket \
    /lib/systemd/system/rdma-qos-sad@.service \
    /lib/udev/rules.d/90-rdma-qos.rules /usr/share/bash-completion/completions/rdma-qos \
    /usr/share/man/man8/rdma-qos.8.gz /usr/share/man/man8/rdma-qos-sad.8.gz
has librdmacm-qos1 "/usr/lib/$multiarch/librdmacm-qos.so.1"
has librdmacm-qos-dev /usr/include/rdma-qos/rdmacm-qos/rdma_qos.h \
    "/usr/lib/$multiarch/pkgconfig/librdmacm-qos.pc" /usr/share/man/man3/rdma_qos.3.gz
has rdma-qos-preload /usr/bin/rdma-qos-run "/usr/lib/$multiarch/rdma-qos/librdmaqos-preload.so" \
    /usr/share/man/man8/rdma-qos-run.8.gz
# The OpenSM plugin: where OpenSM's dlopen("librdma-qos-opensm.so") finds it (a directory of the
# loader's own search path, not one added to it), tied to the OpenSM release it was built for.
has rdma-qos-opensm-plugin "/usr/lib/$multiarch/librdma-qos-opensm.so" \
    /usr/share/man/man8/rdma-qos-opensm.8.gz
# The Slurm plugin: named by its path in plugstack.conf, tied to the Slurm release it was built
# for (Slurm refuses a plugin of another major.minor release).
has rdma-qos-slurm "/usr/lib/$multiarch/rdma-qos/spank_rdma_qos.so" /usr/share/man/man8/rdma-qos-slurm.8.gz \
    /usr/share/doc/rdma-qos-slurm/examples/plugstack.conf.example
slurm_release=$(dpkg-query -W -f='${source:Upstream-Version}' libslurm-dev | cut -d. -f1,2)
depends=$(dpkg-deb -f "$(ls "$out"/rdma-qos-slurm_*.deb)" Depends)
grep -qF "slurm-wlm-basic-plugins (>= $slurm_release)" <<<"$depends" || fail "slurm plugin Depends: $depends"
ld_so=$(readlink -f /lib64/ld-linux-x86-64.so.2 2>/dev/null || ls /lib/$multiarch/ld-linux*.so.* | head -1)
"$ld_so" --help | sed -n '/system search path/,$p' | grep -q "^ */usr/lib/$multiarch " ||
    fail "/usr/lib/$multiarch is not on the loader's system search path"
opensm_upstream=$(dpkg-query -W -f='${source:Upstream-Version}' libopensm-dev)
depends=$(dpkg-deb -f "$(ls "$out"/rdma-qos-opensm-plugin_*.deb)" Depends)
grep -qF "opensm (>= $opensm_upstream), opensm (<< $opensm_upstream.~)" <<<"$depends" ||
    fail "plugin Depends: $depends"
# The shared library's package carries its symbols file; the units run the notify type.
dpkg-deb -I "$(ls "$out"/librdmacm-qos1_*.deb)" symbols | grep -q '^ rdma_qos_query@RDMA_QOS_1.0' ||
    fail "no symbols control file"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$(ls "$out"/rdma-qos_*.deb)" "$work"
grep -qx 'Type=notify' "$work/lib/systemd/system/rdma-qos-lsd.service" || fail "lsd unit type"
grep -qx 'ExecStart=/usr/sbin/rdma-qos-lsd --foreground' "$work/lib/systemd/system/rdma-qos-lsd.service" ||
    fail "lsd unit ExecStart"
if grep -E '^E: ' "$out/lintian.log"; then fail "lintian errors"; fi
echo PASS
