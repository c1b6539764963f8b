#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of one scenario of the providers `verbs` VM group (vm/verbs.sh.in): the
# programs transferred, the UDP source port on the wire in both directions is the fold of the
# label the mode prescribes, and the module passed exactly that label (its test hook).
# Expected values are computed here from the RFC formulas, never by the code under test.
#   check-verbs.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../vm/check-lib.sh"

require_results
require_exit_zero client server
for side in client server; do
    grep -q '^5 iters in' "$dir/$side.log" || fail "$side: no 5 iterations"
done
case $scenario in
    *_ipv6) client=fd00::1 server=fd00::2 ;;
    *) client=10.0.0.1 server=10.0.0.2 ;;
esac

lqpn=$(sed -n 's/.*local address: .*QPN \(0x[0-9a-f]*\),.*/\1/p' "$dir/client.log")
rqpn=$(sed -n 's/.*remote address: .*QPN \(0x[0-9a-f]*\),.*/\1/p' "$dir/client.log")
[ -n "$lqpn" ] && [ -n "$rqpn" ] || { fail "no QPNs in client.log"; lqpn=0 rqpn=0; }
# The label each mode prescribes for a plain verbs QP pair, and what the module passes on.
case $scenario in
    # linux: Linux's own label for a QP not set up by rdma_cm is the QPN hash too.
    rfc_*|spread_*|linux_*) label=$(qpn_label "$lqpn" "$rqpn"); passed=$label ;;
    fixed_*) label=$((0x12345)); passed=$label ;;
    off_*) label=$(qpn_label "$lqpn" "$rqpn"); passed=0 ;;   # the kernel's own QPN hash
    program_label_*) label=$((0x777)); passed=$label ;;
    tclass_*|policy_class_*) label=$(qpn_label "$lqpn" "$rqpn"); passed=$label ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
want=$(fold "$label")
echo "QPNs $lqpn/$rqpn: label $(printf 0x%05x "$label"), expected UDP source port $want"

# The test hook: each side's RTR transition passed the label (and SL / traffic class).
for side in client server; do
    rec=$(grep '"call":"ibv_modify_qp"' "$dir/$side.record" 2>/dev/null | grep -v '"dest_qp":0,' | tail -1 || true)
    if [ -z "$rec" ]; then
        fail "$side: the module recorded no RTR transition"
        continue
    fi
    echo "$side record: $rec"
    got=$(sed -n 's/.*"flow_label":\([0-9]*\).*/\1/p' <<<"$rec")
    [ "$got" = "$passed" ] || fail "$side: module passed label $got, expected $passed"
    if [[ $scenario == tclass_* ]]; then
        [[ $rec == *'"sl":3,'* ]] || fail "$side: SL 3 not passed"
        [[ $rec == *'"traffic_class":104,'* ]] || fail "$side: traffic class 104 not passed"
    fi
    if [[ $scenario == policy_class_* ]]; then
        # The level of class 12 in vm/qos-policy.conf, decided by the module for a plain-verbs QP.
        [[ $rec == *'"sl":4,'* ]] || fail "$side: the level's SL 4 not passed"
        [[ $rec == *'"traffic_class":72,'* ]] || fail "$side: traffic class 72 not passed"
        [[ $rec == *'"source":"plain_verbs"'* ]] || fail "$side: the level's source is not plain_verbs"
    fi
done

read_capture "$dump" 8
require_data_both_ways "$client" "$server" 4 "$want" "not from UDP source port $want"
if [[ $scenario == tclass_* ]]; then
    bad=$(data_rows | awk -F'\t' '$6 != 26' | wc -l)   # traffic class 104 = DSCP 26
    [ "$bad" = 0 ] || fail "$bad data packets without DSCP 26"
fi
if [[ $scenario == rfc_* ]]; then
    # No class, no policy: the stock traffic class (0) on every data packet.
    bad=$(data_rows | awk -F'\t' '$6 != 0' | wc -l)
    [ "$bad" = 0 ] || fail "$bad data packets with a DSCP though nothing asked for one"
fi
if [[ $scenario == policy_class_* ]]; then
    # Both directions (require_data_both_ways above), every data packet: traffic class 72.
    bad=$(data_rows | awk -F'\t' '$6 != 18' | wc -l)   # traffic class 72 = DSCP 18
    [ "$bad" = 0 ] || fail "$bad data packets without DSCP 18"
fi

finish
