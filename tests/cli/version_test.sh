#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rdma-qos answers --help, --version and `version --json`, and rejects unknown subcommands.
set -euo pipefail
bin=$1
"$bin" --help | grep -q 'version' || { echo "FAIL: --help lists no subcommand"; exit 1; }
"$bin" version --json | jq -e '.version | test("^[0-9]+\\.[0-9]+\\.[0-9]+$")' >/dev/null
"$bin" version --help | grep -q -- '--json'
if "$bin" no-such-command 2>/dev/null; then echo "FAIL: unknown subcommand accepted"; exit 1; fi
# Usage errors exit 2 (not CLI11's 100+) and say who is speaking.
usage() {
    local err rc
    err=$("$bin" "$@" 2>&1 >/dev/null) && rc=0 || rc=$?
    [ "$rc" = 2 ] || { echo "FAIL: rdma-qos $* exited $rc, expected 2"; exit 1; }
    [[ $err == rdma-qos:* ]] || { echo "FAIL: rdma-qos $*: '$err' is not prefixed rdma-qos:"; exit 1; }
}
usage no-such-command
usage --no-such-option
usage policy check
usage policy check /dev/null --no-such-option
usage sad stats --format yaml
# Every subcommand that prints results has --json.
for sub in "env" "version" "policy check" "policy explain" "policy dump" "policy vlarb" \
           "path" "path cpi" "flow label" "flow sport" "kernel show" "kernel apply" \
           "sad stats" "sad reload" "sad rediscover"; do
    # shellcheck disable=SC2086
    help=$("$bin" $sub --help)
    grep -q -- '--json' <<<"$help" || { echo "FAIL: rdma-qos $sub has no --json"; exit 1; }
done
echo PASS
