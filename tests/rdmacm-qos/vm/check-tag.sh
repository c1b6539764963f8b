#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of the connection-tag scenarios (tag_*) of the rdmacm-qos `cm` VM group
# (vm/cm.sh.in, tag-policy.conf: BRONZE, SL 1, is port 7540's level; SILVER, SL 7, QoS-Class
# 40's; both have traffic class 32): the connection worked and carried one message; the passive
# program received exactly the private data the scenario expects (with or without the tag's
# bytes); each side's module decided the level the scenario expects. The tag's bytes are
# computed here from the layout in Documentation/architecture.md, never by the code under test.
#   check-tag.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../vm/check-lib.sh"

require_results
require_exit_zero client server
for side in client server; do
    grep -q "cm_private_data: $side ok" "$dir/$side.log" || fail "$side: did not finish"
done
grep -q '^received tagged-hello$' "$dir/server.log" || fail "server: the client's message did not arrive"

port=7540
hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
zeros() { local i out=; for ((i = 0; i < $1; i++)); do out+=00; done; echo "$out"; }
# 32-bit FNV-1a over the bytes of a hex string, continuing from hash $2.
fnv1a() {
    local h=$2 i
    for ((i = 0; i < ${#1}; i += 2)); do
        h=$(( ((h ^ 16#${1:i:2}) * 16777619) & 0xFFFFFFFF ))
    done
    echo "$h"
}
# The tag for QoS-Class $1, traffic class $2, level name $3, active source port $4.
tag_hex() {
    local h level head check
    h=$(fnv1a "$(hex "$3")" 2166136261)
    level=$(( (h ^ (h >> 24)) & 0xFFFFFF ))
    head=$(printf '72516f530107%04x%02x%06x' "$1" "$2" "$level")
    check=$(fnv1a "$(printf '%04x%04x' "$port" "$4")" "$(fnv1a "$head" 2166136261)")
    printf '%s%08x' "$head" "$check"
}

read_capture "$dump" 6
# The REQ: its service and the active side's source port (the check word covers both).
req=$(mad_rows | awk -F'\t' '$11 == "0x7" && $12 == "0x10"' | head -n1)
[ -n "$req" ] || fail "no CM REQ captured"
sport=$(cut -f14 <<<"$req")
echo "CM REQ from source port $sport"

case $scenario in
    tag_both) data=hello client_level=SILVER server_level=SILVER tagged=read ;;
    tag_fallback) data=hello client_level= server_level=BRONZE tagged=none ;;
    tag_passive_plain) data=hello client_level=SILVER server_level= tagged=seen ;;
    tag_no_room) data=$(printf 'x%.0s' {1..41}) client_level=SILVER server_level=BRONZE tagged=none ;;
    tag_off) data=hello client_level=SILVER server_level=BRONZE tagged=none ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
sl_of() { case $1 in SILVER) echo 7 ;; BRONZE) echo 1 ;; esac; }

# What the passive program received: always 56 bytes, its peer's first, then zeros, and the
# tag in the last 16 only when its own module did not take it out.
want=$(hex "$data")$(zeros $((56 - ${#data})))
if [ "$tagged" = seen ]; then
    want=$(hex "$data")$(zeros $((40 - ${#data})))$(tag_hex 40 40 SILVER "$sport")
fi
got=$(sed -n 's/^private_data //p' "$dir/server.log")
echo "passive program's private data: $got"
grep -q '^private_data_len 56$' "$dir/server.log" || fail "server: private data is not 56 bytes long"
[ "$got" = "$want" ] || fail "server: private data $got, expected $want"

# The active side's module: its level (SILVER from QoS-Class 40), and the tag it sent.
if [ -n "$client_level" ]; then
    rr=$(grep '"call":"rdma_resolve_route"' "$dir/client.record" | head -n1)
    echo "client rdma_resolve_route: $rr"
    [[ $rr == *"\"qos_class\":40,\"level\":\"$client_level\",\"sl\":$(sl_of "$client_level"),"* ]] ||
        fail "client: QoS-Class 40 did not give $client_level"
    [[ $rr == *"\"tos_set\":32,"* ]] || fail "client: the level's traffic class 32 was not set"
    sent=$(grep -c '"call":"rdma_connect_tag"' "$dir/client.record" || true)
    if [ "$tagged" = none ]; then
        [ "$sent" = 0 ] || fail "client: a tag was sent"
    else
        tl=$(grep '"call":"rdma_connect_tag"' "$dir/client.record")
        echo "client tag: $tl"
        [[ $tl == *"\"qos_class\":40,\"tclass\":40,"*"\"program_bytes\":5,\"cm_dport\":$port,\"cm_sport\":$sport}"* ]] ||
            fail "client: the tag sent is not QoS-Class 40, TOS 40 for 5 bytes on this connection"
    fi
fi

# The passive side's module: one decision, with or without the tag, and the SL it applied.
if [ -n "$server_level" ]; then
    acc=$(grep '"call":"rdma_accept"' "$dir/server.record")
    echo "server rdma_accept: $acc"
    [ "$(grep -c '"call":"rdma_accept"' "$dir/server.record")" = 1 ] || fail "server: not one rdma_accept"
    [[ $acc == *"\"level\":\"$server_level\",\"sl\":$(sl_of "$server_level"),"* ]] ||
        fail "server: decided no $server_level"
    [[ $acc == *"\"received_tclass\":32,"* ]] || fail "server: the REQ's traffic class was not 32"
    if [ "$tagged" = read ]; then
        [[ $acc == *"\"tag\":{\"qos_class\":40,\"tclass\":40,"*"\"agrees\":true}"* ]] ||
            fail "server: the tag was not read, or its level disagreed"
    else
        [[ $acc == *"\"tag\":null,"* ]] || fail "server: a tag was read where none was sent"
    fi
    rtr=$(grep '"call":"ibv_modify_qp"' "$dir/server.record" | grep -v '"dest_qp":0,' | head -n1)
    echo "server RTR: $rtr"
    [[ $rtr == *"\"sl\":$(sl_of "$server_level"),"* ]] || fail "server: SL $(sl_of "$server_level") not passed to the provider"
else
    [ ! -s "$dir/server.record" ] || fail "server: recorded decisions without the module"
fi

# The traffic class both directions carry: the active side's (32: SILVER's, or the program's).
require_data_both_ways 10.0.0.1 10.0.0.2 6 8 "without DSCP 8"
finish
