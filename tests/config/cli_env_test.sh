#!/usr/bin/env bash
# `rdma-qos env`: lists every knob, shows where each value came from, reports bad settings.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
printf 'flow_label spread\nsl 4\n' > "$conf"

out=$(RDMA_QOS_CONFIG="$conf" RDMA_QOS_SL=6 "$bin" env --json)
[ "$(jq -r '.knobs[] | select(.key=="flow_label") | .value' <<<"$out")" = spread ] || fail "file value"
[ "$(jq -r '.knobs[] | select(.key=="flow_label") | .source' <<<"$out")" = file ] || fail "file source"
[ "$(jq -r '.knobs[] | select(.key=="sl") | .value' <<<"$out")" = 6 ] || fail "env overrides file"
[ "$(jq -r '.knobs[] | select(.key=="sl") | .origin' <<<"$out")" = RDMA_QOS_SL ] || fail "env origin"
[ "$(jq -r '.knobs[] | select(.key=="log_level") | .source' <<<"$out")" = default ] || fail "default"

RDMA_QOS_CONFIG="$conf" "$bin" env | grep -q '^RDMA_QOS_FLOW_LABEL="spread"$' || fail "text listing"

printf 'nonsense 1\n' > "$conf"
set +e
err=$(RDMA_QOS_CONFIG="$conf" "$bin" env 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "exit status $rc for a bad file"
grep -q "$conf:1: error: unknown key 'nonsense'" <<<"$err" || fail "diagnostic: $err"
echo PASS
