#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The preload module logs a condition it cannot act on once per process, however often it
# meets it, and still passes every call on: three RTR transitions on a QP whose device cannot
# be queried reach the provider three times and print one line on stderr.
#   preload_log_test.sh MODULE CLIENT FAKE_PROVIDER
set -euo pipefail
module=$1
client=$2
provider=$3
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

RDMA_QOS_TEST_RECORD=$dir/record LD_PRELOAD="$module:$provider" "$client" \
    >"$dir/out" 2>"$dir/err" || fail "client exited $? (stderr: $(cat "$dir/err"))"
echo "stdout:"; cat "$dir/out"
echo "stderr:"; cat "$dir/err"
[ "$(grep -c '^provider: ibv_modify_qp' "$dir/out")" = 3 ] || fail "the provider did not get 3 calls"
[ "$(grep -c 'cannot tell the link layer' "$dir/err")" = 1 ] || fail "not logged exactly once"
[ "$(wc -l <"$dir/err")" = 1 ] || fail "other lines on stderr"
grep -q "^rdma-qos\[[0-9]*\]: " "$dir/err" || fail "log line without the rdma-qos[PID] prefix"
[ "$(grep -c '"call":"ibv_modify_qp"' "$dir/record")" = 3 ] || fail "the test hook did not record 3 calls"
grep -q '"changed":false,"reason":"unknown link layer"' "$dir/record" || fail "record: $(cat "$dir/record")"
echo PASS
