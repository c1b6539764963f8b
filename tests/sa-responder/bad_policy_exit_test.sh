#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A policy with errors stops rdma-qos-sad before it looks at any port, with every diagnostic
# and exit status 78 (EX_CONFIG, which its unit does not restart on): no fabric needed. So does
# an opensm.conf whose routing engines may give each path its own SL.
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
# routing_engine lash (or any engine with per-path SLs anywhere in the fallback list): 78,
# naming the engine; minhop and updn run on to the port (which does not exist here: not 78).
printf 'qos-levels\n  qos-level\n    name: DEFAULT\n    sl: 0\n  end-qos-level\nend-qos-levels\n' > "$work/good.conf"
for engines in lash "updn,dfsssp" nue torus-2QoS; do
    printf 'routing_engine %s\n' "$engines" > "$work/opensm.conf"
    out=$("$sad" --foreground --policy "$work/good.conf" --opensm-conf "$work/opensm.conf" \
        --ca rdma_qos_no_such_ca 2>&1)
    rc=$?
    [ "$rc" -eq 78 ] || fail "routing_engine $engines: exit status $rc, expected 78: $out"
    grep -q "routing_engine ${engines##*,} gives each path its own SL, which rdma-qos-sad cannot see" <<<"$out" ||
        fail "routing_engine $engines: $out"
done
for engines in minhop "ftree,updn"; do
    printf 'routing_engine %s\n' "$engines" > "$work/opensm.conf"
    out=$("$sad" --foreground --policy "$work/good.conf" --opensm-conf "$work/opensm.conf" \
        --ca rdma_qos_no_such_ca 2>&1)
    rc=$?
    [ "$rc" -ne 78 ] || fail "routing_engine $engines refused: $out"
done
echo PASS
