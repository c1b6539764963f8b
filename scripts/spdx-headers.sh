#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Every source, build and script file tracked by git carries the project's SPDX licence line
# (LICENSE): `check` (the default, run by run-tests.sh) lists the files without it and fails;
# `add` puts it at the top of each, after a shebang line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mode=${1:-check}
tag='SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB'

# The comment leader for a file, or nothing for files that carry no header (data, prose,
# packaging, which debian/copyright covers).
leader() {
    case $1 in
        debian/*) ;;
        *.c | *.h | *.cpp | *.hpp | *.map) echo '//' ;;
        *CMakeLists.txt | *.cmake | *.sh | *.rules | *.service | *.socket | *.service.in | *.socket.in \
            | *.in | *.py | *.bash | .clang-format | .clang-tidy | .ci/run) echo '#' ;;
    esac
}

missing=0
while IFS= read -r f; do
    [ -f "$f" ] || continue
    l=$(leader "$f")
    [ -n "$l" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier:' && continue
    if [ "$mode" = add ]; then
        if [ "$l" = '//' ] && [[ $f == *.map ]]; then line="/* $tag */"; else line="$l $tag"; fi
        if head -n 1 "$f" | grep -q '^#!'; then
            { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$f.spdx"
        else
            { echo "$line"; cat "$f"; } >"$f.spdx"
        fi
        chmod --reference="$f" "$f.spdx"
        mv "$f.spdx" "$f"
    else
        echo "no SPDX line: $f"
        missing=1
    fi
done < <(git ls-files)
if [ "$mode" = check ] && [ "$missing" -ne 0 ]; then
    echo "spdx-headers.sh: add them with scripts/spdx-headers.sh add" >&2
    exit 1
fi
