#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librdmacm-qos exports exactly what debian/librdmacm-qos1.symbols lists: a symbol added or lost
# (an ABI change) fails here, long before a package build would.
set -euo pipefail
lib=$(readlink -f "$1")
symbols=$(readlink -f "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
cp "$symbols" "$work/debian/librdmacm-qos1.symbols"
cd "$work"
# dpkg-gensymbols reads the package name from debian/control.
printf 'Source: rdma-qos\n\nPackage: librdmacm-qos1\nArchitecture: any\n' > debian/control
if ! dpkg-gensymbols -v0.1.0 -plibrdmacm-qos1 -c4 -e"$lib" -O"$work/out.symbols" >"$work/log" 2>&1; then
    cat "$work/log"
    echo "FAIL: $lib does not export what the symbols file lists"
    exit 1
fi
echo PASS
