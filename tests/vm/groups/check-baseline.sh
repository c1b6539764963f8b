#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of one scenario of the `baseline` VM group (groups/baseline.sh): the tools
# connected and transferred, and the wire shows the kernel's own choices (Linux 6.1 + rxe).
# Expected values are computed here from the RoCE v2 rules (Documentation/testing.md), from
# numbers learnt on the wire or from the tools' output, never by code under test.
#   check-baseline.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../check-lib.sh"

require_results
require_exit_zero client server

case $scenario in
    *_ipv6) ipver=6 client=fd00::1 server=fd00::2 ;;
    *) ipver=4 client=10.0.0.1 server=10.0.0.2 ;;
esac
# Ports as in groups/baseline.sh.
case $scenario in
    rping_ipv4) port=7471 ;; rping_ipv6) port=7472 ;;
    ucmatose_ipv4) port=7473 ;; ucmatose_ipv6) port=7474 ;;
    ucmatose_tos) port=7475 ;; ucmatose_configfs_tos) port=7476 ;;
    rc_pingpong_ipv4) port=7477 ;; rc_pingpong_ipv6) port=7478 ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
# DSCP: 0 unless set with rdma_set_option(TOS) (ucmatose -t 0x68: DSCP 26) or configfs
# default_roce_tos on the active side's device (72: DSCP 18). Both directions follow the
# active side: the passive side takes the traffic class from the CM REQ's path.
case $scenario in
    ucmatose_tos) dscp=26 ;;
    ucmatose_configfs_tos) dscp=18 ;;
    *) dscp=0 ;;
esac

# Transfer evidence in the tools' own output.
count() { grep -c -- "$1" "$dir/$2" 2>/dev/null || true; }
case $scenario in
    rping_*)
        [ "$(count 'ping data: rdma-ping-' client.log)" = 3 ] || fail "client did not ping 3 times"
        [ "$(count 'server ping data: rdma-ping-' server.log)" = 3 ] || fail "server saw no 3 pings" ;;
    ucmatose_*)
        for side in client server; do
            grep -q 'data transfers complete' "$dir/$side.log" || fail "$side: no data transfer"
        done ;;
    rc_pingpong_*)
        for side in client server; do
            grep -q '^5 iters in' "$dir/$side.log" || fail "$side: no 5 iterations"
        done ;;
esac

read_capture "$dump" 12

[ "$(rows | wc -l)" -gt 0 ] || fail "no RoCE v2 packet captured"
bad=$(rows | awk -F'\t' -v v="$ipver" '$1 != v' | wc -l)
[ "$bad" = 0 ] || fail "$bad packets not IPv$ipver"
for d in "$client $server" "$server $client"; do
    set -- $d
    n=$(data_rows | awk -F'\t' -v s="$1" -v t="$2" '$2 == s && $3 == t' | wc -l)
    [ "$n" -gt 0 ] || fail "no data packet from $1 to $2"
done
# rxe writes no IPv6 flow label whatever the QP's label: the UDP source port is the observable.
bad=$(rows | awk -F'\t' '$5 != "0x0"' | wc -l)
[ "$bad" = 0 ] || fail "$bad packets with a non-zero IPv6 flow label"
bad=$(data_rows | awk -F'\t' -v d="$dscp" '$6 != d' | wc -l)
[ "$bad" = 0 ] || fail "$bad data packets with DSCP other than $dscp"

case $scenario in
    rc_pingpong_*)
        # No CM: the label is the QPN hash of the two QPs, read from the tool's output.
        lqpn=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\),.*/\1/p' "$dir/client.log")
        rqpn=$(sed -n 's/.*remote address: .*QPN \(0x[0-9a-f]*\),.*/\1/p' "$dir/client.log")
        if [ -z "$lqpn" ] || [ -z "$rqpn" ]; then
            fail "no QPNs in client.log"
        else
            want=$(fold "$(qpn_label "$lqpn" "$rqpn")")
            echo "QPNs $lqpn/$rqpn: expected UDP source port $want"
        fi
        [ "$(mad_rows | wc -l)" = 0 ] || fail "CM MADs without rdma_cm" ;;
    *)
        # CM MADs (QP1) always leave from UDP port 55410.
        [ "$(mad_rows | wc -l)" -gt 0 ] || fail "no CM MAD captured"
        bad=$(mad_rows | awk -F'\t' '$4 != 55410' | wc -l)
        [ "$bad" = 0 ] || fail "$bad CM MADs not from UDP port 55410"
        # The REQ names the service (RDMA_PS_TCP << 16 | port) and carries the active side's
        # source port in its private data.
        req=$(mad_rows | awk -F'\t' '$11 == "0x7" && $12 == "0x10" && !n++')
        if [ -z "$req" ]; then
            fail "no CM REQ captured"
            want=
        else
            sid=$(cut -f13 <<<"$req")
            src_port=$(cut -f14 <<<"$req")
            [ $((sid)) = $(( (0x0106 << 16) | port )) ] ||
                fail "REQ service ID $sid, expected port $port in the TCP port space"
            want=$(fold "$(linux_cm_label "$src_port" "$port")")
            echo "CM ports $src_port -> $port: expected UDP source port $want"
        fi ;;
esac
if [ -n "${want:-}" ]; then
    bad=$(data_rows | awk -F'\t' -v w="$want" '$4 != w' | wc -l)
    [ "$bad" = 0 ] || fail "$bad data packets not from UDP source port $want"
fi

finish
