#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Renders one built man page the way `man` shows it, with groff's warnings on: fails on any
# warning and on a page without the NAME and SYNOPSIS or DESCRIPTION sections users look for.
set -euo pipefail
page=$1
[ -s "$page" ] || { echo "check-man-page: $page: missing or empty" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
warnings=$(MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >"$out")
if [ -n "$warnings" ]; then
    echo "check-man-page: $page: groff warnings:" >&2
    echo "$warnings" >&2
    exit 1
fi
grep -q '^NAME' "$out" || { echo "check-man-page: $page: no NAME section" >&2; exit 1; }
grep -Eq '^(SYNOPSIS|DESCRIPTION)' "$out" ||
    { echo "check-man-page: $page: neither SYNOPSIS nor DESCRIPTION" >&2; exit 1; }
echo "check-man-page: $page: ok"
