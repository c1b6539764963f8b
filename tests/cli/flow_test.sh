#!/usr/bin/env bash
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

if "$bin" flow label --cm-ports 3260 70000 2>"$err"; then fail "port 70000 accepted"; fi
grep -q "port must be a number" "$err" || fail "no reason for a bad port: $(cat "$err")"
if "$bin" flow label --cm-ports 1 2 --qpns 3 4 2>/dev/null; then fail "both inputs accepted"; fi
if "$bin" flow label 2>/dev/null; then fail "no input accepted"; fi
if "$bin" flow label --qpns 1 2 --mode bogus 2>"$err"; then fail "bad mode accepted"; fi
grep -q "invalid flow label setting 'bogus'" "$err" || fail "bad mode reason: $(cat "$err")"
"$bin" flow --help | grep -q sport || fail "help"
echo PASS
