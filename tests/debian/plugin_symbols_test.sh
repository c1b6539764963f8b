#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The OpenSM plugin module exports exactly osm_event_plugin, the one symbol OpenSM looks up:
# rdma-qos's C++ and the libraries linked into it stay private, so nothing clashes with OpenSM's
# own symbols or another plugin's. It has no SONAME (a dlopen()ed module, see
# debian/rdma-qos-opensm-plugin.lintian-overrides).
set -euo pipefail
module=$(readlink -f "$1")
exported=$(nm -D --defined-only "$module" | awk '{print $3}' | sed 's/@.*//' | sort -u)
if [ "$exported" != "osm_event_plugin" ]; then
    echo "FAIL: $module exports:"
    echo "$exported"
    exit 1
fi
if readelf -d "$module" | grep -q '(SONAME)'; then
    echo "FAIL: $module has a SONAME"
    exit 1
fi
echo PASS
