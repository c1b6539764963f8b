#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos path` as a user meets it without a fabric: help everywhere, and bad arguments
# rejected with a message (JSON with --json) before any port is opened.
set -euo pipefail
cli=$1
"$cli" path --help | grep -q -- '--service-id'
"$cli" path --help | grep -q -- '--qos-class'
"$cli" path cpi --help | grep -q 'ClassPortInfo'
set +e
out=$("$cli" path --mtu '>999' --json)
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc for a bad --mtu"; exit 1; }
grep -q '"code":"invalid-argument"' <<<"$out" || { echo "FAIL: $out"; exit 1; }
echo PASS
