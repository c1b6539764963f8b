#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A policy with errors stops rdma-qos-sad before it looks at any port, with every diagnostic
# and exit status 78 (EX_CONFIG, which its unit does not restart on): no fabric needed.
set -uo pipefail
sad=$1
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'qos-levels\n  qos-level\n    name: DEFAULT\n  end-qos-level\nend-qos-levels\n' > "$work/bad.conf"
out=$("$sad" --foreground --policy "$work/bad.conf" --ca rdma_qos_no_such_ca 2>&1)
rc=$?
[ "$rc" -eq 78 ] || fail "exit status $rc, expected 78: $out"
grep -q "$work/bad.conf:2:3: error: qos-level 'DEFAULT' has no 'sl'" <<<"$out" || fail "diagnostic: $out"
grep -q "not starting" <<<"$out" || fail "no reason: $out"
# Detached (no --foreground), the parent returns the child's status, 78 too.
"$sad" --policy "$work/bad.conf" --ca rdma_qos_no_such_ca >/dev/null 2>&1
rc=$?
[ "$rc" -eq 78 ] || fail "detached: exit status $rc, expected 78"
# The diagnostic names its severity once.
out=$("$sad" --foreground --policy "$work/bad.conf" --ca rdma_qos_no_such_ca 2>&1)
grep -qx "rdma-qos-sad: $work/bad.conf:2:3: error: qos-level 'DEFAULT' has no 'sl'" <<<"$out" ||
    fail "diagnostic line: $out"
# Under systemd (JOURNAL_STREAM naming stderr's file) the lines carry journal priorities.
: > "$work/stderr"
JOURNAL_STREAM=$(stat -c '%d:%i' "$work/stderr") "$sad" --foreground --policy "$work/bad.conf" \
    --ca rdma_qos_no_such_ca 2>>"$work/stderr"
grep -q "^<3>$work/bad.conf:2:3: error: qos-level 'DEFAULT' has no 'sl'" "$work/stderr" ||
    fail "no journal priority: $(cat "$work/stderr")"
echo PASS
