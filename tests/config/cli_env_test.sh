#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
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

# Listings are captured before grep: grep -q stops reading early, and pipefail would count the
# writer's SIGPIPE as a failure.
text=$(RDMA_QOS_CONFIG="$conf" "$bin" env)
grep -q '^RDMA_QOS_FLOW_LABEL="spread"$' <<<"$text" || fail "text listing"

# RDMA_QOS_CONFIG is listed as a row: its value and where it came from.
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_CONFIG") | .value' <<<"$out")" = "$conf" ] || fail "config row value"
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_CONFIG") | .source' <<<"$out")" = environment ] || fail "config row source"
out=$(env -u RDMA_QOS_CONFIG "$bin" env --json 2>/dev/null || true)
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_CONFIG") | .value' <<<"$out")" = /etc/rdma/rdma-qos.conf ] || fail "config row default value"
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_CONFIG") | .source' <<<"$out")" = default ] || fail "config row default source"
text=$(RDMA_QOS_CONFIG="$conf" "$bin" env)
grep -qx "RDMA_QOS_CONFIG=\"$conf\"" <<<"$text" || fail "config row in the text listing"

# The documented names, and the deprecated ones still accepted with a warning (exit 0).
out=$(RDMA_QOS_CONFIG="$conf" RDMA_QOS_POLICY=/tmp/p.conf RDMA_QOS_LOG=debug "$bin" env --json)
[ "$(jq -r '.knobs[] | select(.key=="policy_file") | .origin' <<<"$out")" = RDMA_QOS_POLICY ] || fail "RDMA_QOS_POLICY"
[ "$(jq -r '.knobs[] | select(.key=="log_level") | .value' <<<"$out")" = debug ] || fail "RDMA_QOS_LOG"
err=$(RDMA_QOS_CONFIG="$conf" RDMA_QOS_POLICY_FILE=/tmp/old.conf "$bin" env --json 2>&1 >/dev/null) ||
    fail "a deprecated name is no error"
grep -q 'RDMA_QOS_POLICY_FILE: warning: deprecated name; use RDMA_QOS_POLICY' <<<"$err" || fail "deprecation warning: $err"
out=$(RDMA_QOS_CONFIG="$conf" RDMA_QOS_POLICY_FILE=/tmp/old.conf "$bin" env --json 2>/dev/null)
[ "$(jq -r '.knobs[] | select(.key=="policy_file") | .value' <<<"$out")" = /tmp/old.conf ] || fail "deprecated name value"

printf 'nonsense 1\n' > "$conf"
set +e
err=$(RDMA_QOS_CONFIG="$conf" "$bin" env 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "exit status $rc for a bad file"
grep -q "$conf:1: error: not a known key" <<<"$err" || fail "diagnostic: $err"
# Every variable something reads is listed, with its rdma-qos.conf key, or as environment only.
printf 'flow_label spread\n' > "$conf"
out=$(RDMA_QOS_CONFIG="$conf" "$bin" env --json)
for var in RDMA_QOS_SAD_SOCKET RDMA_QOS_PRELOAD_MODULE RDMA_QOS_SAD_OPTIONS RDMA_QOS_CLI; do
  jq -e --arg v "$var" '.knobs[] | select(.env == $v)' <<<"$out" >/dev/null || fail "$var not listed"
done
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_SAD_SOCKET") | .key' <<<"$out")" = sad_socket ] || fail "sad_socket key"
[ "$(jq -r '.knobs[] | select(.env=="RDMA_QOS_SAD_OPTIONS") | .key' <<<"$out")" = null ] || fail "sad_options is no file key"
text=$(RDMA_QOS_CONFIG="$conf" "$bin" env)
grep -qx '# .*rdma-qos.conf key: flow_label; default: "rfc"; from file.*' <<<"$text" ||
  fail "text listing names the key"
# An environment-only knob in the file is an error naming its variable.
printf 'sad_options --no-policy\n' > "$conf"
err=$(RDMA_QOS_CONFIG="$conf" "$bin" env 2>&1 >/dev/null) && fail "sad_options accepted in the file"
grep -q "sad_options is read from the environment only (RDMA_QOS_SAD_OPTIONS)" <<<"$err" || fail "$err"
echo PASS
