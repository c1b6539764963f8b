#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# tclass match rules (an rdma-qos extension) through `rdma-qos policy`: a policy using them is
# valid for rdma-qos; `check --opensm` (and --opensm-conf) warns at every tclass keyword that
# OpenSM rejects the file, with file:line:col, and --strict makes that exit 1; `explain --tclass`
# matches on the traffic class; `dump` shows the criterion.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
status() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
policy=$work/tclass.conf
cat > "$policy" <<'POLICY'
qos-levels
  qos-level
    name: DEFAULT
    sl: 0
  end-qos-level
  qos-level
    name: Gold
    sl: 3
  end-qos-level
end-qos-levels
qos-match-rules
  qos-match-rule
    tclass: 96, 104-111
    qos-level-name: Gold
  end-qos-match-rule
end-qos-match-rules
POLICY
: > "$work/opensm.conf"

[ "$(status "$bin" policy check --strict "$policy")" = 0 ] || fail "a tclass policy is valid for rdma-qos"
out=$("$bin" policy check --opensm "$policy" 2>&1) || fail "--opensm without --strict exits 0: $out"
expected="$policy:13:5: warning: 'tclass' is an rdma-qos extension: OpenSM rejects this policy file"
grep -qxF "$expected" <<<"$out" || fail "no OpenSM warning at 13:5: $out"
grep -q "hint: give OpenSM a copy without tclass criteria" <<<"$out" || fail "no hint: $out"
[ "$(status "$bin" policy check --opensm --strict "$policy")" = 1 ] || fail "--opensm --strict"
out=$("$bin" policy check --opensm-conf "$work/opensm.conf" "$policy" 2>&1) || true
grep -qxF "$expected" <<<"$out" || fail "--opensm-conf does not imply --opensm: $out"
json=$("$bin" policy check --opensm --json "$policy")
grep -q '"line": 13' <<<"$json" || fail "JSON lacks the line: $json"

out=$("$bin" policy explain "$policy" --tclass 105)
grep -q "Gold" <<<"$out" || fail "explain --tclass 105 does not match Gold: $out"
out=$("$bin" policy explain "$policy" --tclass 112)
grep -q "tclass" <<<"$out" || fail "explain --tclass 112 does not name the failed criterion: $out"
[ "$(status "$bin" policy explain "$policy" --tclass 256)" = 2 ] || fail "--tclass 256 is a usage error"
out=$("$bin" policy dump "$policy")
grep -q "tclass 0x60, 0x68-0x6f" <<<"$out" || fail "dump does not show the tclass criterion: $out"
echo PASS
