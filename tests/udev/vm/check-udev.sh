#!/usr/bin/env bash
# Host-side check of the udev VM group: for rxe0 (RoCE) udev adds our unit to SYSTEMD_WANTS;
# for a plain netdev it does not.
#   check-udev.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
fail() { echo "FAIL: $scenario: $*"; exit 1; }
[ -d "$dir" ] || fail "no results in $dir (did the VM group run?)"
cat "$dir/log" 2>/dev/null || true
[ "$(cat "$dir/status" 2>/dev/null)" = 0 ] || fail "guest scenario failed"
grep -E 'SYSTEMD_WANTS|90-rdma-qos' "$dir/rxe0.log" || true
grep -q '^SYSTEMD_WANTS=.*rdma-qos-kernel@rxe0.service' "$dir/rxe0.log" ||
    fail "udev did not want rdma-qos-kernel@rxe0.service for rxe0"
if grep -q 'rdma-qos-kernel@' "$dir/vA.log"; then fail "rule fired for a netdev"; fi
echo "PASS: $scenario"
