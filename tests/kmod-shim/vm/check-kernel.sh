#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of one scenario of the kmod-shim `kernel` VM group (vm/kernel.sh.in):
# `rdma-qos kernel apply` set the configfs default (and a second run kept it), the connection
# worked, and its data packets carry the DSCP of that TOS in both directions (the passive side
# follows the active side's path). DSCP = TOS >> 2, computed here.
#   check-kernel.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# The rdma-qos-lsd scenarios of the group have their own check.
case $scenario in lsd_*) exec "$(dirname "${BASH_SOURCE[0]}")/check-lsd.sh" "$@" ;; esac
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../vm/check-lib.sh"

require_results
for f in apply1.log apply2.log show.json; do echo "--- $f"; cat "$dir/$f" 2>/dev/null || true; done
require_exit_zero client server

case $scenario in
    ucmatose_default_tos) tos=72 ;;
    nvme_default_tos) tos=104 ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
dscp=$((tos >> 2))

grep -q "set rxe0:1 default_roce_tos: $tos" "$dir/apply1.log" || fail "first apply did not set $tos"
grep -q "kept rxe0:1 default_roce_tos: $tos" "$dir/apply2.log" || fail "second apply was not idempotent"
got=$(jq -r '.[] | select(.device == "rxe0") | .default_roce_tos' "$dir/show.json" 2>/dev/null || true)
[ "$got" = "$tos" ] || fail "kernel show reports '$got' for rxe0, expected $tos"
if [ "$scenario" = nvme_default_tos ]; then
    # rxe1 is covered by the bare default 0 and both ports got the v2 mode.
    got=$(jq -r '.[] | select(.device == "rxe1") | .default_roce_tos' "$dir/show.json" 2>/dev/null || true)
    [ "$got" = 0 ] || fail "rxe1 default_roce_tos '$got', expected 0"
    modes=$(jq -r '.[].default_roce_mode' "$dir/show.json" 2>/dev/null | sort -u)
    [ "$modes" = "RoCE v2" ] || fail "modes '$modes', expected RoCE v2"
    grep -q '8+0 records in' "$dir/client.log" || fail "no block read over NVMe/RDMA"
fi

read_capture "$dump" 6
require_data_both_ways 10.0.0.1 10.0.0.2 6 "$dscp" "without DSCP $dscp"

finish
