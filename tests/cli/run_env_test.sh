#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos run-env`: the HPC stacks' QoS variables for a program's class, from the RoCE host
# policy (no device needed with --link roce). The policy (run_env/qos-policy.conf) gives class 5
# SL 3, class 7 SL 6, anything else SL 1; roce_sl2tclass below maps SL 1 -> 32, SL 3 -> 104 and
# SL 6 to nothing. Expected values are written out.
set -euo pipefail
bin=$1
policy=$(dirname "${BASH_SOURCE[0]}")/run_env/qos-policy.conf
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'policy_file %s\nroce_sl2tclass 0,32,0,104\n' "$policy" > "$tmp/rdma-qos.conf"
export RDMA_QOS_CONFIG=$tmp/rdma-qos.conf
unset RDMA_QOS_CLASS RDMA_QOS_POLICY UCX_IB_SL UCX_IB_TRAFFIC_CLASS NCCL_IB_SL NCCL_IB_TC \
    NCCL_IB_FIFO_TC NCCL_GIN_IB_TC NVSHMEM_IB_SL NVSHMEM_IB_TRAFFIC_CLASS UCC_TL_MLX5_QP_SL \
    PSM3_NIC_SL UCX_IB_AR_ENABLE

expect() {  # expect WHAT EXPECTED ACTUAL
    [ "$2" = "$3" ] || fail "$1: expected
$2
got
$3"
}

# The class's level: SL and its traffic class for every stack, in the table's order: UCX,
# NCCL (data, FIFO control messages, GPU-initiated GIN), NVSHMEM, UCC's TL/MLX5, libfabric's
# psm3.
expect "class 5" "UCX_IB_SL=3
UCX_IB_TRAFFIC_CLASS=104
NCCL_IB_SL=3
NCCL_IB_TC=104
NCCL_IB_FIFO_TC=104
NCCL_GIN_IB_TC=104
NVSHMEM_IB_SL=3
NVSHMEM_IB_TRAFFIC_CLASS=104
UCC_TL_MLX5_QP_SL=3
PSM3_NIC_SL=3" "$("$bin" run-env --link roce --class 5)"

# The class from the environment (RDMA_QOS_CLASS) or the configuration file.
expect "RDMA_QOS_CLASS=5" "UCX_IB_SL=3" "$(RDMA_QOS_CLASS=5 "$bin" run-env --link roce | head -n 1)"
printf 'class 5\n' >> "$tmp/rdma-qos.conf"
out=$("$bin" run-env --link roce --explain)
grep -q "class 5 ($tmp/rdma-qos.conf:3)" <<<"$out" || fail "class from the file: $out"
sed -i '$d' "$tmp/rdma-qos.conf"

# No class: the default level (a plain-verbs QP has no Service-ID: the STORAGE rule never
# matches).
expect "no class" "UCX_IB_SL=1
UCX_IB_TRAFFIC_CLASS=32
NCCL_IB_SL=1
NCCL_IB_TC=32
NCCL_IB_FIFO_TC=32
NCCL_GIN_IB_TC=32
NVSHMEM_IB_SL=1
NVSHMEM_IB_TRAFFIC_CLASS=32
UCC_TL_MLX5_QP_SL=1
PSM3_NIC_SL=1" "$("$bin" run-env --link roce)"

# A level whose SL roce_sl2tclass does not map: SL only; --explain says why the TC is not set
# and what the stack does instead.
expect "class 7" "UCX_IB_SL=6
NCCL_IB_SL=6
NVSHMEM_IB_SL=6
UCC_TL_MLX5_QP_SL=6
PSM3_NIC_SL=6" "$("$bin" run-env --link roce --class 7)"
out=$("$bin" run-env --link roce --class 7 --explain)
grep -qx '# NCCL_IB_TC not set: roce_sl2tclass maps no traffic class to SL 6 (NCCL: the communicator'"'"'s trafficClass if the program set one, else 0)' <<<"$out" ||
    fail "class 7 --explain: $out"
grep -qx '# NCCL_IB_FIFO_TC not set: roce_sl2tclass maps no traffic class to SL 6 (NCCL: the connection'"'"'s traffic class, the sender'"'"'s NCCL_IB_TC)' <<<"$out" ||
    fail "class 7 --explain of NCCL_IB_FIFO_TC: $out"
grep -qx '# NVSHMEM_IB_TRAFFIC_CLASS not set: roce_sl2tclass maps no traffic class to SL 6 (NVSHMEM: 0)' <<<"$out" ||
    fail "class 7 --explain of NVSHMEM_IB_TRAFFIC_CLASS: $out"

# --explain: each line followed by why: the class and its source, the level, the rule with
# file, line and column.
out=$("$bin" run-env --link roce --class 5 --explain)
why=$(grep -A1 -x 'NCCL_IB_TC=104' <<<"$out" | sed -n 2p)
[[ $why == "  # NCCL's traffic class byte, DSCP 26 << 2 (roce_sl2tclass of SL 3): class 5 (--class) -> level HPC (SL 3), rule 2 of the RoCE host policy ($policy:28:5)" ]] ||
    fail "why of NCCL_IB_TC: '$why'"
why=$(grep -A1 -x 'UCX_IB_SL=3' <<<"$out" | sed -n 2p)
[[ $why == "  # UCX's service level (RoCE: the Ethernet priority): class 5 (--class) -> level HPC"* ]] ||
    fail "why of UCX_IB_SL: '$why'"
why=$(grep -A1 -x 'NCCL_IB_FIFO_TC=104' <<<"$out" | sed -n 2p)
[[ $why == "  # NCCL's traffic class byte of its FIFO (control) messages, DSCP 26 << 2 (roce_sl2tclass of SL 3): class 5 (--class) -> level HPC (SL 3), rule 2 "* ]] ||
    fail "why of NCCL_IB_FIFO_TC: '$why'"
why=$(grep -A1 -x 'UCC_TL_MLX5_QP_SL=3' <<<"$out" | sed -n 2p)
[[ $why == "  # UCC's service level of TL/MLX5's QPs (RoCE: the Ethernet priority): class 5 (--class)"* ]] ||
    fail "why of UCC_TL_MLX5_QP_SL: '$why'"
out=$("$bin" run-env --link roce --explain)
grep -q 'no QoS class -> level DEFAULT (SL 1), no rule matches: the default level' <<<"$out" ||
    fail "default level --explain: $out"

# A value the user set is kept (and said so), unless --override.
expect "user's UCX_IB_SL" "UCX_IB_TRAFFIC_CLASS=104
NCCL_IB_SL=3
NCCL_IB_TC=104
NCCL_IB_FIFO_TC=104
NCCL_GIN_IB_TC=104
NVSHMEM_IB_SL=3
NVSHMEM_IB_TRAFFIC_CLASS=104
UCC_TL_MLX5_QP_SL=3
PSM3_NIC_SL=3" "$(UCX_IB_SL=0 "$bin" run-env --link roce --class 5)"
expect "user's NCCL_IB_FIFO_TC" "NCCL_IB_TC=104
NCCL_GIN_IB_TC=104" "$(NCCL_IB_FIFO_TC=184 "$bin" run-env --link roce --class 5 | grep '^NCCL_.*TC=')"
out=$(UCX_IB_SL=0 "$bin" run-env --link roce --class 5 --explain)
grep -qx '# UCX_IB_SL kept: the environment sets UCX_IB_SL=0 (the policy'"'"'s value 3; --override replaces it)' <<<"$out" ||
    fail "kept --explain: $out"
expect "--override" "UCX_IB_SL=3" "$(UCX_IB_SL=0 "$bin" run-env --link roce --class 5 --override | head -n 1)"
# An empty variable counts as unset.
expect "empty UCX_IB_SL" "UCX_IB_SL=3" "$(UCX_IB_SL='' "$bin" run-env --link roce --class 5 | head -n 1)"

# --json: the decision and every variable with its action, in the table's order (the Slurm
# plugin reads name, action and value), and the warnings (none here).
UCX_IB_SL=0 "$bin" run-env --link roce --class 5 --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["link"] == "RoCE" and j["class"] == 5 and j["sl"] == 3 and j["traffic_class"] == 104, j
assert [x["name"] for x in j["variables"]] == ["UCX_IB_SL", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_SL",
    "NCCL_IB_TC", "NCCL_IB_FIFO_TC", "NCCL_GIN_IB_TC", "NVSHMEM_IB_SL",
    "NVSHMEM_IB_TRAFFIC_CLASS", "UCC_TL_MLX5_QP_SL", "PSM3_NIC_SL"], j
v = {x["name"]: x for x in j["variables"]}
assert v["UCX_IB_SL"]["action"] == "kept" and v["UCX_IB_SL"]["environment"] == "0", v
assert v["NCCL_IB_TC"]["action"] == "set" and v["NCCL_IB_TC"]["value"] == 104, v
assert v["NVSHMEM_IB_TRAFFIC_CLASS"]["action"] == "set" and v["NVSHMEM_IB_TRAFFIC_CLASS"]["value"] == 104, v
assert v["PSM3_NIC_SL"]["action"] == "set" and v["PSM3_NIC_SL"]["value"] == 3, v
assert j["warnings"] == [], j
' || fail "--json"

# --sysfs: the devices run-env looks at. A fake one: mlx5_0 port 1 an active RoCE port (so
# --link auto decides with the host policy) with the mlx5 global traffic class override at 106,
# mlx5_1 port 1 without an override (empty file), port 2 with one destination rule.
sys=$tmp/sys
mkdir -p "$sys/mlx5_0/ports/1" "$sys/mlx5_0/tc/1" "$sys/mlx5_1/tc/1" "$sys/mlx5_1/tc/2"
echo "4: ACTIVE" > "$sys/mlx5_0/ports/1/state"
echo Ethernet > "$sys/mlx5_0/ports/1/link_layer"
echo "Global tclass=106" > "$sys/mlx5_0/tc/1/traffic_class"
: > "$sys/mlx5_1/tc/1/traffic_class"
echo "dst_ip=10.0.0.0/8,tclass=96" > "$sys/mlx5_1/tc/2/traffic_class"
warning="rdma-qos run-env: warning: the mlx5 traffic class override is set on mlx5_0 port 1 (Global tclass=106), mlx5_1 port 2 (1 destination rule): the kernel gives every verbs QP with a GRH on those ports that traffic class (a destination rule: the QPs to its destinations), over what UCX_IB_TRAFFIC_CLASS, NCCL_IB_TC and the other stack variables say (this class: 104); only QPs made through DEVX (UCX's mlx5 transports, NCCL's GIN GDAKI, NVSHMEM's IBGDA and IBDEVX) keep the variables' value; writing -1 to $sys/mlx5_0/tc/1/traffic_class removes the port's global value"
out=$("$bin" run-env --sysfs "$sys" --class 5 2>"$tmp/err")
expect "--sysfs: the variables" "UCX_IB_SL=3
UCX_IB_TRAFFIC_CLASS=104" "$(head -n 2 <<<"$out")"
expect "--sysfs: the override warning, once" "$warning" "$(cat "$tmp/err")"
"$bin" run-env --sysfs "$sys" --class 5 --json 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert len(j["warnings"]) == 1 and j["warnings"][0].startswith("the mlx5 traffic class override is set on mlx5_0 port 1 (Global tclass=106)"), j
assert j["variables"][0] == {"name": "UCX_IB_SL", "action": "set", "value": 3, "why": j["variables"][0]["why"]}, j
' || fail "--sysfs --json"
# Without an override nothing is said; a port the driver shows without the tc directory (an
# upstream kernel) has none.
echo > "$sys/mlx5_0/tc/1/traffic_class"
rm "$sys/mlx5_1/tc/2/traffic_class"
"$bin" run-env --sysfs "$sys" --class 5 >/dev/null 2>"$tmp/err"
expect "--sysfs: no override" "" "$(cat "$tmp/err")"
rm -r "$sys/mlx5_0/tc" "$sys/mlx5_1"
"$bin" run-env --sysfs "$sys" --class 5 >/dev/null 2>"$tmp/err"
expect "--sysfs: no tc directory" "" "$(cat "$tmp/err")"

# --policy names another file; a missing default policy is no policy (nothing, exit 0); a named
# one that cannot be read, or a policy with errors, is exit 1 with the reason.
expect "--policy" "UCX_IB_SL=3" "$("$bin" run-env --link roce --class 5 --policy "$policy" | head -n 1)"
out=$(RDMA_QOS_CONFIG=/dev/null "$bin" run-env --link roce --class 5 --explain 2>&1) ||
    fail "missing default policy exits $?"
[[ $out == "# nothing to export: no host policy (/etc/rdma/qos-policy.conf does not exist)" ]] ||
    [ -e /etc/rdma/qos-policy.conf ] || fail "missing default policy: $out"
set +e
err=$("$bin" run-env --link roce --policy "$tmp/none.conf" 2>&1 >/dev/null); st=$?
set -e
[ "$st" = 1 ] || fail "unreadable --policy exits $st"
[[ $err == *"cannot read the policy $tmp/none.conf"* ]] || fail "unreadable --policy: $err"
printf 'qos-levels\n' > "$tmp/bad.conf"
set +e
"$bin" run-env --link roce --policy "$tmp/bad.conf" > /dev/null 2>&1; st=$?
set -e
[ "$st" = 1 ] || fail "bad policy exits $st"

# Usage errors exit 2.
set +e
"$bin" run-env --link nvlink > /dev/null 2>&1; st=$?
[ "$st" = 2 ] || fail "--link nvlink exits $st"
"$bin" run-env --class 4096 > /dev/null 2>&1; st=$?
[ "$st" = 2 ] || fail "--class 4096 exits $st"
set -e
"$bin" run-env --help | grep -q -- '--override' || fail "--help"
echo PASS
