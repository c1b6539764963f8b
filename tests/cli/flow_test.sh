#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos flow` as a user runs it: the RFC vectors, JSON, modes, and clear errors.
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT

out=$("$bin" flow label --qpns 0x123 0xabcd)
grep -q 'flow label 215563 (0x34a0b)' <<<"$out" || fail "qpn label: $out"
grep -q 'UDP source port 51718 (0xca06)' <<<"$out" || fail "qpn sport: $out"

[ "$("$bin" flow sport 0x34a0b --json | jq -r .udp_sport)" = 51718 ] || fail "sport json"
[ "$("$bin" flow label --cm-ports 3260 40000 --json | jq -r .flow_label)" = $((0x27d7d)) ] || fail "cm rfc"
[ "$("$bin" flow label --cm-ports 3260 40000 --mode linux --json | jq -r .flow_label)" = $(((40000*31+3260) & 0xfffff)) ] || fail "cm linux"
[ "$("$bin" flow label --cm-ports 3260 40000 --mode 0x777 --json | jq -r .flow_label)" = $((0x777)) ] || fail "fixed"

# `flow sport` in text, from hex and from decimal.
want=$'flow label 215563 (0x34a0b)\nUDP source port 51718 (0xca06)'
[ "$("$bin" flow sport 0x34a0b)" = "$want" ] || fail "sport text: $("$bin" flow sport 0x34a0b)"
[ "$("$bin" flow sport 215563)" = "$want" ] || fail "sport decimal"
# Hex ports are the same ports: 0xcbc = 3260, 0x9c40 = 40000.
[ "$("$bin" flow label --cm-ports 0xcbc 0x9c40 --json | jq -r .flow_label)" = $((0x27d7d)) ] || fail "hex ports"
[ "$("$bin" flow label --cm-ports 0xCBC 0x9C40 --json | jq -r .cm_dport)" = 3260 ] || fail "upper-case hex"

# spread: the fold cancels the label's high bits, leaving 0xC000 | ((dport + sport) * 0x2C35
# mod 2^14): (3260 + 40000) * 11317 = 489,573,420, mod 16384 = 3116 (0xc2c), port 0xcc2c.
out=$("$bin" flow label --cm-ports 3260 40000 --mode spread --json)
[ "$(jq -r .udp_sport <<<"$out")" = $((0xcc2c)) ] || fail "spread sport: $out"
[ "$(jq -r .mode <<<"$out")" = spread ] || fail "spread mode name: $out"
[ "$("$bin" flow label --cm-ports 40000 3260 --mode spread --json | jq -r .flow_label)" = \
  "$(jq -r .flow_label <<<"$out")" ] || fail "spread not symmetric"
# For QPNs every mode but off and a fixed label gives the RFC's QPN label.
[ "$("$bin" flow label --qpns 0x123 0xabcd --mode spread --json | jq -r .flow_label)" = $((0x34a0b)) ] || fail "spread qpns"

# off computes nothing: exit status 1 and why, nothing on stdout.
set +e
out=$("$bin" flow label --cm-ports 3260 40000 --mode off 2>"$err"); st=$?
set -e
[ "$st" = 1 ] || fail "--mode off exits $st, expected 1"
[ -z "$out" ] || fail "--mode off printed '$out'"
grep -q "mode 'off' leaves the kernel's label" "$err" || fail "--mode off reason: $(cat "$err")"

if "$bin" flow label --cm-ports 3260 70000 2>"$err"; then fail "port 70000 accepted"; fi
grep -q "port must be a number" "$err" || fail "no reason for a bad port: $(cat "$err")"
if "$bin" flow label --cm-ports 1 2 --qpns 3 4 2>/dev/null; then fail "both inputs accepted"; fi
if "$bin" flow label 2>/dev/null; then fail "no input accepted"; fi
if "$bin" flow label --qpns 1 2 --mode bogus 2>"$err"; then fail "bad mode accepted"; fi
grep -q "invalid flow label setting 'bogus'" "$err" || fail "bad mode reason: $(cat "$err")"
"$bin" flow --help | grep -q sport || fail "help"
echo PASS
