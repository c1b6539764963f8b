#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos kernel apply|show` on a fake sysfs/configfs tree, from rdma-qos.conf.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/sys/rxe0/ports/1" "$root/cfg/rxe0/ports/1"
echo Ethernet > "$root/sys/rxe0/ports/1/link_layer"
echo 0 > "$root/cfg/rxe0/ports/1/default_roce_tos"
echo "RoCE v2" > "$root/cfg/rxe0/ports/1/default_roce_mode"
printf 'kernel_roce_tos 0, rxe0=104\n' > "$root/rdma-qos.conf"
export RDMA_QOS_CONFIG=$root/rdma-qos.conf
opts=(--sysfs "$root/sys" --configfs "$root/cfg")

out=$("$bin" kernel apply "${opts[@]}")
grep -q 'set rxe0:1 default_roce_tos: 104 (was 0)' <<<"$out" || fail "apply: $out"
[ "$(cat "$root/cfg/rxe0/ports/1/default_roce_tos")" = 104 ] || fail "configfs not written"
out=$("$bin" kernel apply "${opts[@]}")
grep -q 'kept rxe0:1 default_roce_tos: 104' <<<"$out" || fail "not idempotent: $out"
[ "$("$bin" kernel show "${opts[@]}" --json | jq -r '.[0].default_roce_tos')" = 104 ] || fail "show"

# A QoS level's SL, mapped through roce_sl2tclass (the environment overrides the file).
out=$(RDMA_QOS_KERNEL_ROCE_TOS= RDMA_QOS_KERNEL_ROCE_SL=2 RDMA_QOS_ROCE_SL2TCLASS=0,0,72 \
      "$bin" kernel apply "${opts[@]}")
grep -q 'set rxe0:1 default_roce_tos: 72 (was 104)' <<<"$out" || fail "apply by SL: $out"
set +e
err=$(RDMA_QOS_KERNEL_ROCE_TOS= RDMA_QOS_KERNEL_ROCE_SL=7 "$bin" kernel apply "${opts[@]}" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] || fail "unmapped SL exit $rc"
grep -q "SL 7 of rxe0:1 has no traffic class in roce_sl2tclass" <<<"$err" || fail "unmapped SL: $err"
[ "$(cat "$root/cfg/rxe0/ports/1/default_roce_tos")" = 72 ] || fail "written for an unmapped SL"

printf 'kernel_roce_tos 300\n' > "$root/rdma-qos.conf"
set +e
err=$("$bin" kernel apply "${opts[@]}" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] || fail "bad configuration exit $rc"
grep -q "rdma-qos.conf:1: error: kernel_roce_tos: value must be a number 0..255" <<<"$err" || fail "diagnostic: $err"
[ "$(cat "$root/cfg/rxe0/ports/1/default_roce_tos")" = 72 ] || fail "written despite bad configuration"
echo PASS
