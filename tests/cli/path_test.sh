#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `rdma-qos path` numbers as common/number reads them everywhere: decimal or 0x-hex, a leading
# zero decimal (never octal), overflow and junk refused before any port is opened, with the
# option named. Accepted values get as far as opening the port, which --ca names as a CA that
# does not exist, so the command fails there instead (a transport error, not the argument).
set -euo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }

# Runs `rdma-qos path ARGS --ca no-such-ca --json`; sets $out and $rc.
run() {
  set +e
  out=$("$bin" path "$@" --ca no-such-ca --json 2>&1)
  rc=$?
  set -e
}

# refused OPTION VALUE [RANGE]: exit 1, an invalid-argument error naming the option, the text
# and the range.
refused() {
  local option=$1 value=$2 range=${3:-}
  run "$option" "$value"
  [ "$rc" -eq 1 ] || fail "$option $value: exit $rc: $out"
  [ "$(jq -r .error.code <<<"$out")" = invalid-argument ] || fail "$option $value: $out"
  local message
  message=$(jq -r .error.message <<<"$out")
  [[ "$message" == "$option: '$value' is not a number $range"* ]] ||
    fail "$option $value: message '$message'"
}

# accepted OPTION VALUE: the argument passes; the command fails only at the missing CA.
accepted() {
  run "$@"
  [ "$rc" -eq 1 ] || fail "$*: exit $rc: $out"
  [ "$(jq -r .error.code <<<"$out")" = transport ] || fail "$* refused: $out"
}

# A leading zero is decimal: 0255 is 255 (a traffic class) and 0256 is 256 (not one); as octal
# 0256 would be 174 and 09 no number at all.
accepted --tclass 0255
refused --tclass 0256 0..255
accepted --sl 09
refused --sl 016 0..15
refused --numb-path 0128 0..127
accepted --dlid 010
accepted --dlid 0x10
accepted --dlid 0X1f
accepted --service-id 0x1060CBC

# Overflow: past the field, and past 64 bits.
refused --dlid 65536 0..65535
refused --slid 0x10000 0..65535
refused --pkey 0x10000 0..65535
refused --qos-class 4096 0..4095
refused --service-id 18446744073709551616 "0..0xffffffffffffffff"
accepted --service-id 18446744073709551615
refused --sa-lid 0xc000 1..49151
refused --retries 99999999999999999999 0..100
refused --timeout 0 1..3600000

# Junk: trailing characters, signs, an empty value, a bare 0x, a fraction.
refused --dlid 12x
refused --dlid -1
refused --dlid ""
refused --pkey 0x
refused --sl 1.5
refused --port " 1 2"
refused --numb-path +2

# The connection options of `path cpi` too.
set +e
out=$("$bin" path cpi --sa-lid 0 --json 2>&1)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "cpi --sa-lid 0: exit $rc"
[[ "$(jq -r .error.message <<<"$out")" == "--sa-lid: '0' is not a number 1..49151"* ]] ||
  fail "cpi --sa-lid 0: $out"

# Selector values: MTU and rate codes and packet lifetimes read the same way.
accepted --mtu '>02048'
accepted --rate =2.5G
accepted --pkt-life '<063'
run --pkt-life '<064'
[[ "$(jq -r .error.message <<<"$out")" == --pkt-life:* ]] || fail "--pkt-life 064: $out"
run --rate =20xG
[[ "$(jq -r .error.message <<<"$out")" == --rate:* ]] || fail "--rate =20xG: $out"

# Without --json the error goes to standard error, the option named there too.
set +e
err=$("$bin" path --dlid 0x1g --ca no-such-ca 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "text mode: exit $rc"
grep -q -- "--dlid: '0x1g' is not a number 0..65535" <<<"$err" || fail "text mode: $err"
echo PASS
