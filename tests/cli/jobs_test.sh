#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos jobs` over a proc directory of the test's own: which class each job process has,
# and whether the Slurm plugin (its RDMA_QOS_SLURM_SET record) or the user set it.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
proc=$(mktemp -d)
trap 'rm -rf "$proc"' EXIT
process() {  # process PID COMM VAR=VALUE...
    local pid=$1 comm=$2
    shift 2
    mkdir -p "$proc/$pid"
    echo "$comm" > "$proc/$pid/comm"
    printf '%s\0' "$@" > "$proc/$pid/environ"
}
process 100 solver SLURM_JOB_ID=7 SLURM_STEP_ID=0 RDMA_QOS_CLASS=3 UCX_IB_SL=3 NCCL_IB_SL=3 \
    RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3,UCX_IB_SL=3,NCCL_IB_SL=3 HOME=/root
process 200 job.sh SLURM_JOB_ID=8 RDMA_QOS_CLASS=5 UCX_IB_SL=1
process 300 ior RDMA_QOS_CLASS=4
process 400 bash HOME=/root
mkdir "$proc/self"  # not a process

out=$("$bin" jobs --proc "$proc")
expected="JOB      STEP       PID    UID COMMAND          CLASS  SET-BY      VARIABLES
7        0          100      0 solver           3      slurm       UCX_IB_SL=3 NCCL_IB_SL=3
8        batch      200      0 job.sh           5      environment UCX_IB_SL=1"
[ "$out" = "$expected" ] || fail "table:
$out"

out=$("$bin" jobs --proc "$proc" --all --json)
[ "$(jq -r '[.processes[].pid] | join(",")' <<<"$out")" = "100,200,300" ] || fail "--all: $out"
[ "$(jq -r '.processes[2] | "\(.job) \(.class) \(.set_by)"' <<<"$out")" = " 4 environment" ] ||
    fail "--all process outside a job: $out"
[ "$(jq -r '.processes[0].variables.NCCL_IB_SL' <<<"$out")" = 3 ] || fail "variables: $out"

out=$("$bin" jobs --proc "$proc" --job 8 --json)
[ "$(jq -r '[.processes[].pid] | join(",")' <<<"$out")" = "200" ] || fail "--job 8: $out"

# A class the user changed after the plugin set it is the user's.
process 100 solver SLURM_JOB_ID=7 RDMA_QOS_CLASS=9 RDMA_QOS_SLURM_SET=RDMA_QOS_CLASS=3
[ "$("$bin" jobs --proc "$proc" --job 7 --json | jq -r '.processes[0].set_by')" = environment ] ||
    fail "a changed class"

set +e
"$bin" jobs --proc "$proc" --job 99 >/dev/null 2>"$proc/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "--job 99 exit $rc"
grep -q "no readable process of job 99" "$proc/err" || fail "--job 99: $(cat "$proc/err")"
echo PASS
