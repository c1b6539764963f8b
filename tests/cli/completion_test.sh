#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The bash completion offers the program's subcommands and options at each level.
set -euo pipefail
bin=$1
completion=$2
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=/dev/null
source "$completion"
# complete WORDS...: the candidates for the last word.
complete_words() {
    COMP_WORDS=("$bin" "$@")
    COMP_CWORD=$(($#))
    COMPREPLY=()
    _rdma_qos
    printf '%s\n' "${COMPREPLY[@]}"
}
out=$(complete_words "")
for sub in env flow kernel path policy sad version; do
    grep -qx "$sub" <<<"$out" || fail "top level lacks $sub: $out"
done
[ "$(complete_words po)" = policy ] || fail "po -> $(complete_words po)"
out=$(complete_words policy "")
for sub in check explain dump vlarb; do grep -qx "$sub" <<<"$out" || fail "policy lacks $sub"; done
out=$(complete_words sad stats --f)
grep -qx -- --format <<<"$out" || fail "sad stats --f: $out"
out=$(complete_words policy check --st)
[ "$out" = --strict ] || fail "policy check --st: $out"
echo PASS
