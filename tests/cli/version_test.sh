#!/usr/bin/env bash
# rdma-qos answers --help, --version and `version --json`, and rejects unknown subcommands.
set -euo pipefail
bin=$1
"$bin" --help | grep -q 'version' || { echo "FAIL: --help lists no subcommand"; exit 1; }
"$bin" version --json | jq -e '.version | test("^[0-9]+\\.[0-9]+\\.[0-9]+$")' >/dev/null
"$bin" version --help | grep -q -- '--json'
if "$bin" no-such-command 2>/dev/null; then echo "FAIL: unknown subcommand accepted"; exit 1; fi
echo PASS
