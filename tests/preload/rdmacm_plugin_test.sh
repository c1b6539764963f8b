#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The module reaches librdmacm however the program loaded it: a plugin's dlopen(RTLD_LOCAL)
# hides it from RTLD_NEXT, and every rdma_cm call used to fail with ENOSYS. And an id's entry
# is forgotten before the real rdma_destroy_id, not after: an id another thread creates at the
# freed address in between keeps its QoS class. A stand-in librdmacm answers (no device).
#   rdmacm_plugin_test.sh MODULE CLIENT FAKE_RDMACM
set -euo pipefail
module=$1
client=$2
rdmacm=$3
fail() { echo "FAIL: $*"; exit 1; }

for scope in local global; do
  out=$(LD_PRELOAD="$module" "$client" "$rdmacm" "$scope") || fail "$scope: client exited $?"
  echo "$scope:"; echo "$out"
  grep -qx "rdma_get_cm_event -1 ENODATA" <<<"$out" ||
    fail "$scope: rdma_get_cm_event did not reach librdmacm"
  grep -qx "rdma_destroy_id 0; class after it kept 7" <<<"$out" ||
    fail "$scope: the id created at the freed address lost its entry"
done
echo PASS
