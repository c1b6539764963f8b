#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rdma-qos-run preloads the module into an unmodified program, which still runs normally, and
# exports only the interposed verbs and rdma_cm symbols and the rdma_qos.h API; it hands the
# program the HPC stacks' QoS variables for its class (rdma-qos run-env, found next to it) and
# shows them with --print.
set -euo pipefail
run=$1
module=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$("$run" sh -c 'echo "$LD_PRELOAD"')
[ "${out%%:*}" = "$module" ] || fail "LD_PRELOAD is '$out'"
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$run" sh -c 'echo "$LD_PRELOAD"')
[ "$out" = "$module:/lib/x86_64-linux-gnu/libc.so.6" ] || fail "existing LD_PRELOAD lost: '$out'"

# A real verbs program loads the module and exits as it does without it (here, without RDMA
# devices, both fail the same way).
set +e
ibv_devices >/dev/null 2>&1; plain=$?
"$run" ibv_devices >/dev/null 2>&1; preloaded=$?
set -e
[ "$plain" = "$preloaded" ] || fail "ibv_devices exits $preloaded under rdma-qos-run, $plain without"

exports=$(nm -D --defined-only "$module" | awk '{print $3}' | sort | tr '\n' ' ')
want="ibv_create_ah ibv_destroy_qp ibv_modify_qp rclose rconnect rdma_accept rdma_connect rdma_create_ep \
rdma_create_id rdma_destroy_ep rdma_destroy_id rdma_get_cm_event rdma_migrate_id rdma_qos_get_class rdma_qos_get_service_id rdma_qos_query rdma_qos_set_class \
rdma_qos_set_service_id rdma_qos_version rdma_resolve_route rdma_set_option rsetsockopt rsocket "
[ "$exports" = "$want" ] || fail "exports: $exports"
# librdmacm is reached through dlsym only: programs without rdma_cm do not load it.
readelf -d "$module" | grep -q 'librdmacm' && fail "module links librdmacm"
readelf -d "$module" | grep -q SONAME && fail "module has a soname"

"$run" --help | grep -q 'Usage: rdma-qos-run' || fail "--help"
out=$("$run" --version)
[[ $out =~ ^rdma-qos-run\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version prints '$out'"
RDMA_QOS_PRELOAD_MODULE=/nonexistent "$run" true 2>&1 | grep -q 'not found' || fail "missing module"

# The stack variables, from a RoCE host policy giving class 5 SL 3 and roce_sl2tclass mapping
# SL 3 to 104 (DSCP 26). No device here: --link roce.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/policy.conf" <<'POLICY'
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: HPC
        sl: 3
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 5
        qos-level-name: HPC
    end-qos-match-rule
end-qos-match-rules
POLICY
printf 'policy_file %s\nroce_sl2tclass 0,0,0,104\n' "$tmp/policy.conf" > "$tmp/rdma-qos.conf"
export RDMA_QOS_CONFIG=$tmp/rdma-qos.conf
unset RDMA_QOS_CLASS UCX_IB_SL UCX_IB_TRAFFIC_CLASS NCCL_IB_SL NCCL_IB_TC NCCL_IB_FIFO_TC \
    NCCL_GIN_IB_TC NVSHMEM_IB_SL NVSHMEM_IB_TRAFFIC_CLASS UCC_TL_MLX5_QP_SL PSM3_NIC_SL
show='echo "$RDMA_QOS_CLASS $UCX_IB_SL $UCX_IB_TRAFFIC_CLASS $NCCL_IB_SL $NCCL_IB_TC"'
out=$("$run" --link roce --class 5 sh -c "$show")
[ "$out" = "5 3 104 3 104" ] || fail "class 5 exports '$out'"
# Every stack's variables: NCCL's FIFO and GIN traffic classes, NVSHMEM (IBGDA included), UCC's
# TL/MLX5, libfabric's psm3.
out=$("$run" --link roce --class 5 sh -c \
    'echo "$NCCL_IB_FIFO_TC $NCCL_GIN_IB_TC $NVSHMEM_IB_SL $NVSHMEM_IB_TRAFFIC_CLASS $UCC_TL_MLX5_QP_SL $PSM3_NIC_SL"')
[ "$out" = "104 104 3 104 3 3" ] || fail "class 5 exports to the other stacks '$out'"
# A value the user set is kept, unless --override.
out=$(NCCL_IB_TC=96 "$run" --link roce --class 5 sh -c "$show")
[ "$out" = "5 3 104 3 96" ] || fail "user's NCCL_IB_TC: '$out'"
out=$(NCCL_IB_TC=96 "$run" --override --link roce --class 5 sh -c "$show")
[ "$out" = "5 3 104 3 104" ] || fail "--override: '$out'"
out=$("$run" --no-stack-env --link roce --class 5 sh -c "$show")
[ "$out" = "5    " ] || fail "--no-stack-env: '$out'"
# -- ends the options: the command may itself start with a dash-free word that looks like one.
out=$("$run" --link roce --class 5 -- sh -c "$show")
[ "$out" = "5 3 104 3 104" ] || fail "--: '$out'"

# --print: each variable as NAME=VALUE followed by why; the command does not run.
out=$("$run" --print --link roce --class 5 touch "$tmp/ran")
[ ! -e "$tmp/ran" ] || fail "--print ran the command"
for v in RDMA_QOS_CLASS=5 UCX_IB_SL=3 UCX_IB_TRAFFIC_CLASS=104 NCCL_IB_SL=3 NCCL_IB_TC=104 \
    "LD_PRELOAD=$module"; do
    why=$(grep -A1 -x -- "$v" <<<"$out" | sed -n 2p)
    [[ $why == "  # "* ]] || fail "--print: no '$v' followed by why: $out"
done
grep -A1 -x UCX_IB_TRAFFIC_CLASS=104 <<<"$out" |
    grep -q "class 5 (--class) -> level HPC (SL 3), rule 1 of the RoCE host policy ($tmp/policy.conf:12:5)" ||
    fail "--print: why of UCX_IB_TRAFFIC_CLASS: $out"
out=$("$run" --print --no-stack-env --link roce --class 5 prog)
grep -q '^UCX_IB_SL=' <<<"$out" && fail "--print --no-stack-env shows stack variables: $out"
grep -qx '# --no-stack-env: no stack variables' <<<"$out" || fail "--print --no-stack-env: $out"
out=$(UCX_IB_SL=1 "$run" --print --link roce --class 5 prog)
grep -qx '# UCX_IB_SL kept: the environment sets UCX_IB_SL=1 (the policy'"'"'s value 3; --override replaces it)' <<<"$out" ||
    fail "--print of a kept variable: $out"
"$run" --print --json --link roce --class 5 prog | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["class"] == 5 and j["sl"] == 3 and j["traffic_class"] == 104, j
assert [v["name"] for v in j["variables"]] == ["UCX_IB_SL", "UCX_IB_TRAFFIC_CLASS", "NCCL_IB_SL",
    "NCCL_IB_TC", "NCCL_IB_FIFO_TC", "NCCL_GIN_IB_TC", "NVSHMEM_IB_SL", "NVSHMEM_IB_TRAFFIC_CLASS",
    "UCC_TL_MLX5_QP_SL", "PSM3_NIC_SL"], j
' || fail "--print --json"

# A port with the mlx5 traffic class override: the warning reaches the user once, on standard
# error, and the program runs with the variables. An rdma-qos of the test's own points run-env
# at a fake sysfs (run-env --sysfs), whose active RoCE port also decides --link auto.
sys=$tmp/sys
mkdir -p "$sys/mlx5_0/ports/1" "$sys/mlx5_0/tc/1"
echo "4: ACTIVE" > "$sys/mlx5_0/ports/1/state"
echo Ethernet > "$sys/mlx5_0/ports/1/link_layer"
echo "Global tclass=106" > "$sys/mlx5_0/tc/1/traffic_class"
cat > "$tmp/rdma-qos" <<CLI
#!/bin/sh
sub=\$1
shift
exec "${run%/*}/rdma-qos" "\$sub" --sysfs "$sys" "\$@"
CLI
chmod +x "$tmp/rdma-qos"
out=$(RDMA_QOS_CLI=$tmp/rdma-qos "$run" --class 5 sh -c "$show" 2>"$tmp/err")
[ "$out" = "5 3 104 3 104" ] || fail "override: exports '$out'"
[ "$(grep -c 'warning: the mlx5 traffic class override is set on mlx5_0 port 1 (Global tclass=106)' "$tmp/err")" = 1 ] ||
    fail "override: the warning once: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" = 1 ] || fail "override: standard error: $(cat "$tmp/err")"
RDMA_QOS_CLI=$tmp/rdma-qos "$run" --print --class 5 prog >/dev/null 2>"$tmp/err"
[ "$(grep -c 'warning: the mlx5 traffic class override' "$tmp/err")" = 1 ] ||
    fail "override --print: $(cat "$tmp/err")"

# No decision (no RDMA port for --link auto here, or no rdma-qos command): the program still
# runs, without stack variables, and the reason is on standard error.
err=$(RDMA_QOS_CLI=/nonexistent "$run" --link roce --class 5 sh -c "$show" 2>&1 >/dev/null)
[[ $err == *"without stack variables"* ]] || fail "missing rdma-qos: '$err'"
out=$(RDMA_QOS_CLI=/nonexistent "$run" --link roce --class 5 sh -c "$show" 2>/dev/null)
[ "$out" = "5    " ] || fail "missing rdma-qos exports '$out'"
set +e
"$run" --print --link ib --ca no_such_device prog > /dev/null 2>&1; st=$?
[ "$st" = 1 ] || fail "--print without a decision exits $st"
# Usage errors exit 2.
"$run" --bogus true > /dev/null 2>&1; st=$?
[ "$st" = 2 ] || fail "unknown option exits $st"
"$run" --class 4096 true > /dev/null 2>&1; st=$?
[ "$st" = 2 ] || fail "--class 4096 exits $st"
"$run" --class > /dev/null 2>&1; st=$?
[ "$st" = 2 ] || fail "--class without a value exits $st"
set -e
echo PASS
