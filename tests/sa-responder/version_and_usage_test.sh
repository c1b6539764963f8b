#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Every daemon answers --version with its name and version, and a bad command line with exit
# status 2 (not CLI11's 100+ codes), so a unit's RestartPreventExitStatus= can name it.
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
for prog in "$@"; do
    name=$(basename "$prog")
    out=$("$prog" --version) || fail "$name --version exited $?"
    [[ $out =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$name --version printed '$out'"
    "$prog" --no-such-option >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name --no-such-option exited $rc, expected 2"
done
echo PASS
