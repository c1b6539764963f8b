#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The repository stands alone: no source, script or document cites a design document that is
# not in it (the facts live in Documentation/ and the man pages).
set -uo pipefail
cd "$1"
hits=$(git ls-files 2>/dev/null | grep -v '^tests/cmake/stand_alone_test.sh$' |
    xargs -r grep -nIE 'DESIGN\.md|opensm-qos-semantics|shared/seeds|/work/shared' 2>/dev/null)
if [ -n "$hits" ]; then
    echo "FAIL: references to documents outside the repository:"
    echo "$hits"
    exit 1
fi
echo PASS
