#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# No knob is documented that nothing reads: every key `rdma-qos env` lists is read by name
# somewhere in the sources (config.text("key") / get("key")), and every environment-only one
# by its variable (a script, a unit's environment file).
set -euo pipefail
bin=$1
src=$2
fail() { echo "FAIL: $*"; exit 1; }
cd "$src"
files=$(git ls-files -- '*.cpp' '*.h' '*.c' '*.in' '*.sh' | grep -v '^tests/' | grep -v '^config/src/knobs.cpp$')
json=$(RDMA_QOS_CONFIG=/dev/null "$bin" env --json)
while read -r key env; do
    if [ "$key" = null ]; then
        # shellcheck disable=SC2086
        grep -lF "$env" $files >/dev/null || fail "$env: nothing reads it"
    else
        # shellcheck disable=SC2086
        grep -lF "\"$key\"" $files >/dev/null || fail "$key ($env): nothing reads it"
    fi
done < <(jq -r '.knobs[] | select(.env != "RDMA_QOS_CONFIG") | "\(.key) \(.env)"' <<<"$json")
echo PASS
