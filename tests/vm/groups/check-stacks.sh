#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of one scenario of the `stacks` VM group (groups/stacks.sh.in): the stack ran
# between the two sides, and the traffic class on the wire, in both directions, is the stack's
# stock one without rdma-qos-run and the policy's level under it. Expected values are written
# out here: UCX's default traffic class on RoCE v2 is 106 (DSCP 26, ECN 2), NCCL's and
# libfabric's 0; the group's policy gives class 5 SL 5, which its rdma-qos.conf maps to 184
# (DSCP 46, ECN 0).
#   check-stacks.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
dump=$3
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../check-lib.sh"

require_results
echo "guest time: $(cat "$dir/seconds" 2>/dev/null || echo '?') s"

# The interposer's test record (JSON lines) holds what it passed on: every QP's address vector
# and, for rdma_cm, the decision. Prints the lines of CALL. UCX checks each RoCE GID entry by
# creating (and at once destroying) an address handle with flow label 1, SL 0 and traffic
# class 0 that never sends a packet: those are not its traffic's and are left out.
records() {
    grep -F "\"call\":\"$1\"" "$dir/record.jsonl" 2>/dev/null |
        grep -vF '"call":"ibv_create_ah","qp_num":0,"dest_qp":0,"flow_label":1,' || true
}
# Every record line of CALL carries "FIELD":VALUE for each FIELD=VALUE given; there is one.
require_records() {
    local call=$1 lines kv bad
    shift
    lines=$(records "$call")
    [ -n "$lines" ] || { fail "no $call in the test record"; return; }
    for kv in "$@"; do
        bad=$(grep -cvF "\"${kv%%=*}\":${kv#*=}" <<<"$lines" || true)
        [ "$bad" = 0 ] || fail "$bad $call records without ${kv%%=*} ${kv#*=}"
    done
}

# wire DSCP ECN: data packets both ways between 10.0.0.1 and 10.0.0.2 carry this DSCP and ECN.
wire() {
    read_capture "$dump" 6
    require_data_both_ways 10.0.0.1 10.0.0.2 6 "$1" "without DSCP $1"
    require_data_both_ways 10.0.0.1 10.0.0.2 7 "$2" "without ECN $2"
}

case $scenario in
    nccl_standin)
        check_line() {
            local got
            got=$(cat "$dir/$1" 2>/dev/null || true)
            [ "$got" = "$2" ] || fail "$1: '$got', expected '$2'"
        }
        check_line standin.txt "NCCL_IB_SL=5 NCCL_IB_TC=184"
        check_line standin-user.txt "NCCL_IB_SL=5 NCCL_IB_TC=96"
        check_line standin-override.txt "NCCL_IB_SL=5 NCCL_IB_TC=184"
        check_line standin-plain.txt "NCCL_IB_SL=unset NCCL_IB_TC=unset"
        sed 's/^/  print | /' "$dir/print.txt" 2>/dev/null || true
        # Each variable line is followed by why, naming the class, the level and the rule.
        for v in RDMA_QOS_CLASS=5 UCX_IB_SL=5 UCX_IB_TRAFFIC_CLASS=184 NCCL_IB_SL=5 NCCL_IB_TC=184; do
            why=$(grep -A1 -x "$v" "$dir/print.txt" | sed -n 2p)
            [[ $why == "  # "* ]] || fail "--print: no '$v' line followed by why"
        done
        grep -A1 -x NCCL_IB_TC=184 "$dir/print.txt" | grep -q 'class 5.*level HPC (SL 5).*rule 1' ||
            fail "--print: NCCL_IB_TC's why names no class, level and rule"
        python3 - "$dir/print.json" <<'PY' || fail "--print --json"
import json, sys
j = json.load(open(sys.argv[1]))
v = {x["name"]: x for x in j["variables"]}
assert j["link"] == "RoCE", j["link"]  # found on the guest's rxe port (--link auto)
assert j["class"] == 5 and j["sl"] == 5 and j["traffic_class"] == 184, j
assert v["NCCL_IB_TC"]["value"] == 184 and v["NCCL_IB_TC"]["action"] == "set", v
assert v["UCX_IB_SL"]["value"] == 5, v
PY
        ;;
    ucx_stock)
        require_exit_zero client server
        grep -q 'Final:' "$dir/client.log" || fail "ucx_perftest client: no final result"
        wire 26 2 ;;
    ucx_policy)
        require_exit_zero client server
        grep -q 'Final:' "$dir/client.log" || fail "ucx_perftest client: no final result"
        wire 46 0
        # UCX's RC QPs (ibv_modify_qp at RTR) and UD address handles carry the level's SL and
        # traffic class, as UCX itself set them from UCX_IB_SL / UCX_IB_TRAFFIC_CLASS.
        require_records ibv_modify_qp sl=5 traffic_class=184
        require_records ibv_create_ah sl=5 traffic_class=184 ;;
    mpi_stock)
        require_exit_zero client
        [ "$(grep -c 'round trips done' "$dir/client.log" || true)" = 2 ] || fail "not both ranks finished"
        wire 26 2 ;;
    mpi_policy)
        require_exit_zero client
        [ "$(grep -c 'round trips done' "$dir/client.log" || true)" = 2 ] || fail "not both ranks finished"
        wire 46 0
        require_records ibv_modify_qp sl=5 traffic_class=184 ;;
    fi_stock)
        require_exit_zero client server
        grep -q '^64 ' "$dir/client.log" || fail "fi_pingpong: no result line"
        wire 0 0 ;;
    fi_policy)
        require_exit_zero client server
        grep -q '^64 ' "$dir/client.log" || fail "fi_pingpong: no result line"
        wire 46 0
        # libfabric reads no QoS variable: its msg endpoints get the level through rdma_cm,
        # where the interposer matched class 5 (RDMA_QOS_CLASS from --class) on both sides.
        lines=$(grep -F '"level":"HPC"' "$dir/record.jsonl" 2>/dev/null | grep -c '"sl":5' || true)
        [ "$lines" -ge 2 ] || fail "the test record has $lines rdma_cm decisions for level HPC, SL 5"
        require_records ibv_modify_qp sl=5 traffic_class=184 ;;
    *) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac
finish
