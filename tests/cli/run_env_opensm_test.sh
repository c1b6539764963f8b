#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos run-env --link ib` against OpenSM on ibsim: the SL the SA answers for the QoS
# class is what the stacks' SL variables get (run_env/qos-policy.conf: class 5 -> SL 3,
# class 7 -> SL 6, no class -> the default level, SL 1), no traffic class variable on
# InfiniBand, and a silent SA costs at most the bounded wait and says so. With a stand-in mlx5
# HCA (FAKE_MLX5: tests/cli/stub/fake_mlx5.c), a class whose SL has no adaptive routing on its
# port is warned of, and nothing is said where the SL has it or the HCA keeps no mask.
#   run_env_opensm_test.sh RDMA_QOS IBFABRIC FAKE_MLX5
set -euo pipefail
bin=$1
ibfabric=$2
fake_mlx5=$3
policy=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/run_env/qos-policy.conf
out=$("$ibfabric" --cas 2 --cas-per-leaf 2 --policy "$policy" -- bash -c '
  bin=$1
  fake=$2
  lid() { awk -v id="$1" "\$1 == id { print \$2 }" "$IBFABRIC_NODES"; }
  at_node() { SIM_HOST=node001 LD_PRELOAD=$IBFABRIC_PRELOAD RDMA_QOS_CONFIG=/dev/null "$@"; }
  echo "== class 5"; at_node "$bin" run-env --link ib --class 5
  echo "== class 7"; at_node "$bin" run-env --link ib --class 7
  echo "== none"; at_node "$bin" run-env --link ib
  echo "== explain"; at_node "$bin" run-env --link ib --class 5 --explain
  # A LID where no SA answers (another CA): two attempts of 300 ms at most.
  echo "== silent"
  start=$(date +%s%N)
  at_node env RDMA_QOS_SA_LID="$(lid node002)" RDMA_QOS_SA_RETRIES=1 \
      "$bin" run-env --link ib --class 5 --timeout 300 2>&1 && echo "status 0" || echo "status $?"
  echo "elapsed_ms $(( ($(date +%s%N) - start) / 1000000 ))"
  mlx5() { SIM_HOST=node001 LD_PRELOAD="$IBFABRIC_PRELOAD:$fake" RDMA_QOS_CONFIG=/dev/null "$@"; }
  echo "== ar outside"; mlx5 env FAKE_MLX5_AR_SL_MASK=0x3 "$bin" run-env --link ib --class 5 2>&1
  echo "== ar two ports"
  mlx5 env FAKE_MLX5_PORTS=2 FAKE_MLX5_AR_SL_MASK=0x3 UCX_IB_AR_ENABLE=yes \
      "$bin" run-env --link ib --class 5 2>&1 >/dev/null
  echo "== ar inside"; mlx5 env FAKE_MLX5_AR_SL_MASK=0x8 "$bin" run-env --link ib --class 5 2>&1
  echo "== ar no cap"
  mlx5 env FAKE_MLX5_NO_OOO_CAP=1 FAKE_MLX5_AR_SL_MASK=0x3 "$bin" run-env --link ib --class 5 2>&1
' bash "$bin" "$fake_mlx5")
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
section() { awk -v s="== $1" '$0 == s { on = 1; next } /^== / { on = 0 } on' <<<"$out"; }
[ "$(section 'class 5')" = "UCX_IB_SL=3
NCCL_IB_SL=3
NVSHMEM_IB_SL=3
UCC_TL_MLX5_QP_SL=3
PSM3_NIC_SL=3" ] || fail "class 5: $(section 'class 5')"
[ "$(section 'class 7')" = "UCX_IB_SL=6
NCCL_IB_SL=6
NVSHMEM_IB_SL=6
UCC_TL_MLX5_QP_SL=6
PSM3_NIC_SL=6" ] || fail "class 7: $(section 'class 7')"
[ "$(section none)" = "UCX_IB_SL=1
NCCL_IB_SL=1
NVSHMEM_IB_SL=1
UCC_TL_MLX5_QP_SL=1
PSM3_NIC_SL=1" ] || fail "no class: $(section none)"
section explain | grep -q '# UCX_IB_TRAFFIC_CLASS not set: on InfiniBand the SL carries the level' ||
    fail "explain: no word on the traffic class"
section explain | grep -qx '# NVSHMEM_IB_TRAFFIC_CLASS not set: on InfiniBand the SL carries the level (NVSHMEM: 0)' ||
    fail "explain: no word on NVSHMEM's traffic class"
section explain | grep -q '  # NCCL.s service level: class 5 (--class) -> SL 3 in the SA.s PathRecord (SA LID 1' ||
    fail "explain: why of NCCL_IB_SL"
silent=$(section silent)
grep -q 'no answer from the SA at LID 3 in 2 attempts of up to 300 ms' <<<"$silent" ||
    fail "silent SA: $silent"
grep -qx 'status 1' <<<"$silent" || fail "silent SA: not exit 1"
ms=$(sed -n 's/^elapsed_ms //p' <<<"$silent")
[ "$ms" -lt 3000 ] || fail "silent SA took $ms ms"
warning='rdma-qos run-env: warning: SL 3 has no adaptive routing on mlx5_0 port 1 (adaptive routing on SLs 0,1)'
[ "$(section 'ar outside')" = "$warning: this class's traffic there is routed statically; give its level an SL with adaptive routing, or enable adaptive routing on SL 3 in the subnet manager
UCX_IB_SL=3
NCCL_IB_SL=3
NVSHMEM_IB_SL=3
UCC_TL_MLX5_QP_SL=3
PSM3_NIC_SL=3" ] || fail "adaptive routing outside the SL: $(section 'ar outside')"
section 'ar two ports' | grep -q '^rdma-qos run-env: warning: SL 3 has no adaptive routing on mlx5_0 port 1 (adaptive routing on SLs 0,1), mlx5_0 port 2 (adaptive routing on SLs 0,1)' ||
    fail "two ports: $(section 'ar two ports')"
section 'ar two ports' | grep -q 'UCX_IB_AR_ENABLE=yes' || fail "two ports: no word on UCX_IB_AR_ENABLE"
[ "$(section 'ar inside')" = "$(section 'class 5')" ] || fail "SL with adaptive routing: $(section 'ar inside')"
[ "$(section 'ar no cap')" = "$(section 'class 5')" ] || fail "no mask: $(section 'ar no cap')"
echo PASS
