#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Fails when a tracked C/C++ file differs from what clang-format (.clang-format) would write.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
[ ${#files[@]} -eq 0 ] && exit 0
if ! clang-format --dry-run -Werror "${files[@]}"; then
    echo "check-format.sh: run 'clang-format -i' on the files above" >&2
    exit 1
fi
echo "check-format.sh: ${#files[@]} files formatted"
