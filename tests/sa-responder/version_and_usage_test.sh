#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Every daemon answers --version with its name and version, and a bad command line with exit
# status 2 (not CLI11's 100+ codes), so a unit's RestartPreventExitStatus= can name it.
# Numbers on their command lines read as everywhere else: a leading 0 is decimal, not octal.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
for prog in "$@"; do
    name=$(basename "$prog")
    out=$("$prog" --version) || fail "$name --version exited $?"
    [[ $out =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$name --version printed '$out'"
    "$prog" --no-such-option >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name --no-such-option exited $rc, expected 2"
    # 032 is 32, beyond --subnet-timeout's 0..31 (octal 26 would pass); 0300 is 300, beyond
    # --port's 0..254 (octal 192 would pass).
    case $name in
        rdma-qos-sad) bad=(--subnet-timeout 032) ;;
        rdma-qos-lsd) bad=(--port 0300) ;;
        *) continue ;;
    esac
    err=$("$prog" "${bad[@]}" --foreground 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name ${bad[*]} exited $rc, expected 2 (read as octal?): $err"
    grep -q "not in range" <<<"$err" || fail "$name ${bad[*]}: $err"
    err=$("$prog" "${bad[0]}" 0x1z --foreground 2>&1 >/dev/null)
    grep -q "'0x1z' is not a number (decimal or 0x-hex" <<<"$err" || fail "$name ${bad[0]} 0x1z: $err"
done
echo PASS
