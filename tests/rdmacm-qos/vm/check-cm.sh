#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of one scenario of the rdmacm-qos `cm` VM group (vm/cm.sh.in): the programs
# transferred; in both directions the data packets carry the level's DSCP and the UDP source
# port of the CM-port label of the flow-label mode (the RFC's by default; flow_*: the mode in
# RDMA_QOS_FLOW_LABEL); each side's module decided the level's SL and passed it (and the label)
# to the provider (test hook). Expected values are computed here
# from the policy file's intent and the RFC formulas, never by the code under test.
#   check-cm.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# The connection tag's scenarios have their own check.
case $scenario in tag_*) exec "$(dirname "${BASH_SOURCE[0]}")/check-tag.sh" "$@" ;; esac
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../vm/check-lib.sh"

require_results
require_exit_zero client server

# Per scenario: tool, port, addresses, and the level qos-policy.conf gives it (sl, traffic
# class = DSCP << 2 through roce_sl2tclass 0,32,136,104,0,72,184; mtu: the level's limit).
# Fault cases: no decision (sl/tclass "null"), the kernel's DSCP 0.
mtu=
case $scenario in
    rping_ipv4) tool=rping port=7491 sl=3 dscp=26 ;;
    rping_ipv6) tool=rping port=7492 sl=3 dscp=26 ;;
    ucmatose_ipv4) tool=ucmatose port=7493 sl=5 dscp=18 mtu=2 ;;
    ucmatose_ipv6) tool=ucmatose port=7494 sl=5 dscp=18 mtu=2 ;;
    rstream_ipv4) tool=rstream port=7498 sl=1 dscp=8 ;;
    perftest_ipv4) tool=perftest port=7499 sl=2 dscp=34 mtu=2 ;;
    ucmatose_class) tool=ucmatose port=7495 sl=6 dscp=46 ;;
    rsocket_tos_ipv4 | rsocket_tos_nonblock | rsocket_priority_nonblock)
        tool=rsocket_tos port=7500 sl=6 dscp=46 ;;
    rsocket_tclass_ipv6 | rsocket_flowinfo_ipv6) tool=rsocket_tos port=7501 sl=6 dscp=46 ;;
    udaddy_ipv4 | udaddy_ipv6) tool=udaddy port=7174 sl=2 dscp=34 ;;
    fault_no_policy) tool=rping port=7491 sl=null dscp=0 ;;
    fault_bad_policy) tool=ucmatose port=7493 sl=null dscp=0 ;;
    # Garbage everywhere but a valid policy: RPING's SL, no roce_sl2tclass so no DSCP.
    fault_garbage) tool=rping port=7492 sl=3 dscp=0 ;;
    flow_spread | flow_linux | flow_off | flow_fixed) tool=ucmatose port=7493 sl=5 dscp=18 mtu=2 ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
# The passive side learns the active side's QoS-Class from the traffic class the REQ carries
# (ucmatose_class, rsocket_tos_ipv4: GOLD's 184 is QoS-Class 32's level), so both sides decide
# the same SL; the DSCP of both directions follows the active side's TOS.
server_sl=$sl
case $scenario in
    *_ipv6) client=fd00::1 server=fd00::2 ;;
    *) client=10.0.0.1 server=10.0.0.2 ;;
esac

count() { grep -c -- "$1" "$dir/$2" 2>/dev/null || true; }

# The CM-port label of the scenario's flow-label mode (RDMA_QOS_FLOW_LABEL), for service port
# $1 and the active side's CM source port $2. off: the kernel's own (Linux's) label.
spread_cm_label() {   # Documentation/flow-labels.md, written out
    local sum=$(( $1 + $2 ))
    local target=$(( (sum * 0x2C35) & 0x3FFF ))
    local high6=$(( (((sum * 0x9E3779B1) & 0xFFFFFFFF) >> 26) & 0x3F ))
    local label=$(( (high6 << 14) | (target ^ high6) ))
    [ "$label" = 0 ] && label=$(( (1 << 14) | 1 ))
    echo "$label"
}
mode_cm_label() {
    case $scenario in
        flow_spread) spread_cm_label "$1" "$2" ;;
        flow_linux | flow_off) linux_cm_label "$2" "$1" ;;
        flow_fixed) echo $((0x12345)) ;;
        *) rfc_cm_label "$1" "$2" ;;
    esac
}

# Garbage in every variable: each side warned once per bad variable (and once for the missing
# configuration file), and went on.
if [ "$scenario" = fault_garbage ]; then
    for side in client server; do
        for v in RDMA_QOS_CLASS RDMA_QOS_TOS RDMA_QOS_SERVICE_ID RDMA_QOS_ROCE_SL2TCLASS \
                 RDMA_QOS_FLOW_LABEL RDMA_QOS_SL RDMA_QOS_TCLASS RDMA_QOS_SA RDMA_QOS_SA_LID \
                 RDMA_QOS_SA_TIMEOUT_MS RDMA_QOS_SA_RETRIES RDMA_QOS_MPR RDMA_QOS_CACHE_TTL \
                 RDMA_QOS_LOG RDMA_QOS_APPLY_ON_IB RDMA_QOS_KERNEL_ROCE_TOS \
                 RDMA_QOS_KERNEL_ROCE_SL RDMA_QOS_KERNEL_ROCE_MODE; do
            n=$(grep -c "^rdma-qos\[[0-9]*\]: $v: error: " "$dir/$side.log" || true)
            [ "$n" = 1 ] || fail "$side: $n warnings for $v, expected 1"
        done
        n=$(grep -c '^rdma-qos\[[0-9]*\]: /nonexistent/rdma-qos.conf: error: cannot read' "$dir/$side.log" || true)
        [ "$n" = 1 ] || fail "$side: $n warnings for the missing RDMA_QOS_CONFIG file, expected 1"
    done
fi

# UD (udaddy, RDMA_PS_UDP): no connection; the client's address handle comes from the
# ESTABLISHED event (SIDR reply). It must carry the level (SL 2, traffic class 136) and the
# RFC label of the CM ports, and the datagrams the level's DSCP.
if [ "$tool" = udaddy ]; then
    for side in client server; do
        grep -q 'data transfers complete' "$dir/$side.log" || fail "$side: no data transfer"
    done
    read_capture "$dump" 8
    n=$(data_rows | awk -F'\t' -v s="$client" -v t="$server" '$2 == s && $3 == t' | wc -l)
    [ "$n" -gt 0 ] || fail "no datagram from $client to $server"
    bad=$(data_rows | awk -F'\t' -v s="$client" -v t="$server" -v d="$dscp" '$2 == s && $3 == t && $6 != d' | wc -l)
    [ "$bad" = 0 ] || fail "$bad datagrams from $client to $server without DSCP $dscp"
    ev=$(grep '"call":"rdma_get_cm_event","event":"established"' "$dir/client.record" | head -n1)
    echo "client event: $ev"
    [ -n "$ev" ] || fail "client: no ESTABLISHED event of a UD id recorded"
    [[ $ev == *"\"sl\":$sl,"* ]] || fail "client: event's address handle has no SL $sl"
    [[ $ev == *"\"traffic_class\":$((dscp << 2)),"* ]] || fail "client: no traffic class $((dscp << 2))"
    [[ $ev == *"\"service_id\":$(( (0x0111 << 16) | port )),"* ]] || fail "client: wrong Service-ID"
    cs=$(sed -n 's/.*"cm_dport":\([0-9]*\),"cm_sport":\([0-9]*\),.*/\1 \2/p' <<<"$ev")
    set -- $cs
    [ "${1:-}" = "$port" ] || fail "client: CM service port '${1:-}', expected $port"
    want_label=$(rfc_cm_label "$port" "${2:-0}")
    [[ $ev == *"\"flow_label\":$want_label,"* ]] || fail "client: label is not the RFC's $want_label"
    ah=$(grep '"call":"ibv_create_ah"' "$dir/client.record" | head -n1)
    echo "client AH: $ah"
    [[ $ah == *"\"flow_label\":$want_label,\"sl\":$sl,\"traffic_class\":$((dscp << 2)),"* ]] ||
        fail "client: ibv_create_ah was not given the event's label, SL and traffic class"
    # The server answers through an AH from the work completion: it gets the server's decision
    # for that peer (SL) and keeps the received traffic class.
    ah=$(grep '"call":"ibv_create_ah"' "$dir/server.record" | head -n1)
    echo "server AH: $ah"
    [[ $ah == *"\"sl\":$sl,\"traffic_class\":$((dscp << 2)),"* ]] ||
        fail "server: the AH for the client has no SL $sl and traffic class $((dscp << 2))"
    # The id's CM-port label is part of its decision: that AH gets it too. (Not visible on the
    # wire here: rxe sends all of a UD QP's datagrams from one port derived from its QPN.)
    [[ $ah == *"\"flow_label\":$want_label,"* ]] || fail "server: the AH for the client has not the label $want_label"
    n=$(data_rows | awk -F'\t' -v s="$server" -v t="$client" -v d="$dscp" '$2 == s && $3 == t && $6 == d' | wc -l)
    [ "$n" -gt 0 ] || fail "no datagram from $server to $client with DSCP $dscp"
    for side in client server; do echo "$side record:"; cat "$dir/$side.record" 2>/dev/null || true; done
    finish
    exit 0
fi

if [ "$tool" = rping ]; then
    [ "$(count 'ping data: rdma-ping-' client.log)" = 3 ] || fail "client did not ping 3 times"
    [ "$(count 'server ping data: rdma-ping-' server.log)" = 3 ] || fail "server saw no 3 pings"
elif [ "$tool" = rsocket_tos ]; then
    for side in client server; do
        grep -q "rsocket_tos: $side ok" "$dir/$side.log" || fail "$side: no 10 exchanges"
    done
elif [ "$tool" = perftest ]; then
    for side in client server; do
        grep -Eq '^ 1024 +10 ' "$dir/$side.log" || fail "$side: no 10 iterations of 1024 bytes"
    done
elif [ "$tool" = rstream ]; then
    for side in client server; do
        grep -Eq '^custom +4k +20 ' "$dir/$side.log" || fail "$side: no 20 transfers of 4k"
    done
else
    for side in client server; do
        grep -q 'data transfers complete' "$dir/$side.log" || fail "$side: no data transfer"
    done
fi

read_capture "$dump" 8

# The CM REQs (one per connection; perftest opens two): the service (RDMA_PS_TCP << 16 | port)
# and the active side's source port, from which each connection's label follows.
reqs=$(mad_rows | awk -F'\t' '$11 == "0x7" && $12 == "0x10"')
[ -n "$reqs" ] || fail "no CM REQ captured"
declare -A label_of=()   # cm source port -> RFC label
wants=" "
while IFS=$'\t' read -r -a f; do
    [ ${#f[@]} -ge 14 ] || continue
    sid=${f[12]} cm_sport=${f[13]}
    [ $((sid)) = $(( (0x0106 << 16) | port )) ] || fail "REQ service ID $sid, expected port $port"
    label_of[$cm_sport]=$(mode_cm_label "$port" "$cm_sport")
    want=$(fold "${label_of[$cm_sport]}")
    wants+="$want "
    echo "CM ports $cm_sport -> $port: label $(printf 0x%05x "${label_of[$cm_sport]}"), UDP source port $want"
done <<<"$reqs"

require_data_both_ways "$client" "$server" 6 "$dscp" "without DSCP $dscp"
for d in "$client $server" "$server $client"; do
    set -- $d
    # Every data packet leaves from the port of one of the connections, and every connection's
    # port is seen.
    bad=$(data_rows | awk -F'\t' -v s="$1" -v t="$2" -v w="$wants" '$2 == s && $3 == t && index(w, " " $4 " ") == 0' | wc -l)
    [ "$bad" = 0 ] || fail "$bad packets from $1 to $2 not from the UDP source ports$wants"
    for w in $wants; do
        n=$(data_rows | awk -F'\t' -v s="$1" -v t="$2" -v w="$w" '$2 == s && $3 == t && $4 == w' | wc -l)
        [ "$n" -gt 0 ] || fail "no packet from $1 to $2 from UDP source port $w"
    done
done

# The test hook: the rdma_cm layer's decision on each side for each connection, and the RTR
# transition it led to (the label of the connection's CM ports, the decided SL and MTU).
for side in client server; do
    rec=$dir/$side.record
    [ "$side" = client ] && call=rdma_connect || call=rdma_accept
    [ "$side" = client ] && want_sl=$sl || want_sl=$server_sl
    n=0
    while read -r cm; do
        [ -n "$cm" ] || continue
        n=$((n + 1))
        echo "$side $call: $cm"
        [[ $cm == *"\"sl\":$want_sl,"* ]] || fail "$side: $call decided no SL $want_sl"
        [[ $cm == *"\"service_id\":$(( (0x0106 << 16) | port )),"* ]] || fail "$side: wrong Service-ID"
        cs=$(sed -n 's/.*"cm_dport":\([0-9]*\),"cm_sport":\([0-9]*\)}.*/\1 \2/p' <<<"$cm")
        set -- $cs
        if [ "${1:-}" != "$port" ] || [ -z "${label_of[${2:-x}]:-}" ]; then
            fail "$side: CM ports '$cs' are not $port and the source port of a REQ"
        fi
    done < <(grep "\"call\":\"$call\"" "$rec" 2>/dev/null || true)
    [ "$n" = "${#label_of[@]}" ] || fail "$side: $n $call records for ${#label_of[@]} connections"
    n=0
    while read -r rtr; do
        [ -n "$rtr" ] || continue
        n=$((n + 1))
        echo "$side RTR: $rtr"
        got=$(sed -n 's/.*"flow_label":\([0-9]*\),.*/\1/p' <<<"$rtr")
        ok=
        for l in "${label_of[@]}"; do [ "$got" = "$l" ] && ok=1; done
        [ -n "$ok" ] || fail "$side: label $got passed to the provider is no connection's label"
        if [ "$want_sl" != null ]; then
            [[ $rtr == *"\"sl\":$want_sl,"* ]] || fail "$side: SL $want_sl not passed to the provider"
        fi
        if [ -n "$mtu" ]; then
            [[ $rtr == *"mtu=$mtu"* ]] || fail "$side: path MTU not capped to $mtu"
        fi
    done < <(grep '"call":"ibv_modify_qp"' "$rec" 2>/dev/null | grep -v '"dest_qp":0,' || true)
    [ "$n" = "${#label_of[@]}" ] || fail "$side: $n RTR transitions for ${#label_of[@]} connections"
done
# RPING's rate-limit 7 (40 Gb/s): asked of the device at RTS on both sides; rxe has no QP rate
# limiting (EOPNOTSUPP, 95), which each side logs once.
if [ "$tool" = rping ] && [ "$sl" != null ]; then
    for side in client server; do
        grep -q '"call":"ibv_modify_qp_rate_limit".*"rate_limit_kbps":40000000,' "$dir/$side.record" ||
            fail "$side: the level's rate was not asked of the device"
        if grep -q '"rc":95}' "$dir/$side.record"; then
            [ "$(count 'no QP rate limiting' "$side.log")" = 1 ] ||
                fail "$side: an unsupported rate limit was not logged exactly once"
        fi
    done
fi
if [ "$scenario" = ucmatose_class ] || [ "$tool" = rsocket_tos ]; then
    grep -q '"call":"rdma_resolve_route".*"qos_class":32,' "$dir/client.record" ||
        fail "client: TOS / priority 32 was not taken as the QoS-Class"
    grep -q '"call":"rdma_accept".*"qos_class":32,.*"received_tclass":184,' "$dir/server.record" ||
        fail "server: QoS-Class 32 was not learned from the REQ's traffic class 184"
    # GOLD's packet lifetime 10: each side's QP reaches RTS with the local ACK timeout 11.
    for side in client server; do
        grep -q '"call":"ibv_modify_qp_timeout".*"timeout":11,.*"rc":0}' "$dir/$side.record" ||
            fail "$side: the QP did not get GOLD's ACK timeout 11 at RTS"
    done
fi

finish
