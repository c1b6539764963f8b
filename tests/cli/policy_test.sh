#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos policy check|explain|dump` as an administrator runs them: exit codes, the exact
# diagnostics, explanations and JSON.
set -euo pipefail
bin=$1
dir=$(cd "$(dirname "$0")/policy" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
status() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }

# --help everywhere.
for sub in "" check explain dump vlarb; do
  "$bin" policy $sub --help | grep -q -i 'usage' || fail "policy $sub --help"
done

# check: 0 clean, 0 for warnings unless --strict (1), 1 for errors, 2 for an unreadable file.
[ "$(status "$bin" policy check "$dir/clean.conf")" = 0 ] || fail "clean policy"
[ "$(status "$bin" policy check --strict "$dir/clean.conf" --fabric "$dir/fabric.net")" = 0 ] \
  || fail "clean policy with fabric, strict"
[ "$(status "$bin" policy check "$dir/warnings.conf")" = 0 ] || fail "warnings without --strict"
[ "$(status "$bin" policy check --strict "$dir/warnings.conf")" = 1 ] || fail "warnings, strict"
[ "$(status "$bin" policy check "$dir/errors.conf")" = 1 ] || fail "errors"
[ "$(status "$bin" policy check "$dir/no-such-file.conf")" = 2 ] || fail "missing file"
# A FIFO (no writer) is refused at once, not waited on.
fifo=$(mktemp -u)
mkfifo "$fifo"
[ "$(status timeout 20 "$bin" policy check "$fifo")" = 2 ] || { rm -f "$fifo"; fail "FIFO"; }
rm -f "$fifo"

out=$("$bin" policy check "$dir/errors.conf" 2>&1 || true)
expected="$dir/errors.conf:1:1: error: no DEFAULT qos-level
  hint: add a qos-level with 'name: DEFAULT' or a qos-ulps line 'default : <sl>'
$dir/errors.conf:2:3: warning: qos-level 'Fast' is never used
$dir/errors.conf:4:9: error: sl 16 is out of range (0..15)
$dir/errors.conf:10:5: error: qos-level 'Fats' is not defined
  hint: did you mean 'Fast'?"
[ "$out" = "$expected" ] || fail "errors.conf diagnostics:
$out"

# check --json: the verdict and every diagnostic with its location, and the same exit status.
json=$("$bin" policy check --json "$dir/errors.conf" 2>/dev/null) && rc=0 || rc=$?
[ "$rc" = 1 ] || fail "check --json errors.conf exited $rc"
echo "$json" | jq -e '.valid == false and .errors == 3 and .warnings == 1' >/dev/null ||
  fail "check --json counts: $json"
echo "$json" | jq -e '.diagnostics[1] == {"file": "'"$dir/errors.conf"'", "line": 2, "column": 3,
  "severity": "warning", "message": "qos-level '"'Fast'"' is never used"}' >/dev/null ||
  fail "check --json diagnostic: $json"
"$bin" policy check --json "$dir/clean.conf" | jq -e '.valid and .diagnostics == []' >/dev/null ||
  fail "check --json clean"

# A port number the named node does not have needs the fabric to be seen.
[ "$(status "$bin" policy check "$dir/badport.conf")" = 0 ] || fail "badport without fabric"
out=$("$bin" policy check "$dir/badport.conf" --fabric "$dir/fabric.net" 2>&1 || true)
echo "$out" | grep -qxF "$dir/badport.conf:4:16: error: port-name 'node001 HCA-1/P2': node 'node001 HCA-1' has no port 2 (it has 1)" \
  || fail "badport with fabric: $out"

# explain: the failing criterion of each earlier rule, the matching rule and its level.
out=$("$bin" policy explain "$dir/clean.conf" --fabric "$dir/fabric.net" \
        --src "node001 HCA-1" --dst "node003 HCA-1/P1" --qos-class 2)
expected="$dir/clean.conf:22: rule 1 failed on service-id
$dir/clean.conf:27: rule 2 matched: qos-match-rule (lines 27-31)
level Bulk: sl 2, mtu-limit 4, rate-limit 7, packet-life 16"
[ "$out" = "$expected" ] || fail "explain text:
$out"

out=$("$bin" policy explain "$dir/clean.conf" --service-id 0x10001 --json)
echo "$out" | jq -e '.matched.rule == 3 and .matched.line == 34 and .level.sl == 3
  and .considered[0].failed == "service-id" and .considered[1].failed == "destination"' \
  >/dev/null || fail "explain json: $out"

out=$("$bin" policy explain "$dir/clean.conf" --json)
echo "$out" | jq -e '.matched == null and .level.name == "DEFAULT"' >/dev/null \
  || fail "explain default: $out"

# dump: what the engine understood.
out=$("$bin" policy dump "$dir/clean.conf" --json)
echo "$out" | jq -e '(.rules | length) == 3
  and .rules[2].service_id == [[65536, 131071]] and .rules[2].sl == 3
  and .port_groups[0].port_name == ["node003 HCA-1/P1", "node004 HCA-1/P1"]
  and .qos_levels[1].packet_life == 16' >/dev/null || fail "dump json: $out"
"$bin" policy dump "$dir/clean.conf" | grep -qxF "rule 2 (line 27): destination Storage qos-class 0x1-0x3 -> Bulk (sl 2)" \
  || fail "dump text"
# opensm.conf: SL2VL tables checked against the levels, VL arbitration shares.
[ "$(status "$bin" policy check --strict "$dir/sl14.conf")" = 0 ] || fail "sl14 without conf"
out=$("$bin" policy check "$dir/sl14.conf" --opensm-conf "$dir/opensm.conf" 2>&1)
[ "$out" = "$dir/sl14.conf:2:3: warning: level 'DEFAULT' uses SL 14, which qos_swe_sl2vl maps to VL 15: queries at this level get no path record
  hint: OpenSM drops such answers silently" ] || fail "sl14 with conf: $out"
out=$("$bin" policy vlarb "$dir/opensm.conf")
echo "$out" | grep -qxF "qos_ca: max_vls 15, high_limit 6 (burst 24576 bytes), high priority 85.7% of the link" \
  || fail "vlarb text: $out"
echo "$out" | grep -qxF "  VL3  high   0  low 192  share   4.8%" || fail "vlarb VL3: $out"
"$bin" policy vlarb "$dir/opensm.conf" --json | jq -e '.ca.high_burst_bytes == 24576
  and (.ca.vls | length) == 7 and .swe.sl2vl[14] == 15 and (.ca.warnings | length) == 1' \
  >/dev/null || fail "vlarb json"
echo PASS
