#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The module over a librdmacm linked with -Bsymbolic-functions (Ubuntu's default flags), whose
# rdma_create_ep and rdma_destroy_ep call rdma_create_id, rdma_resolve_route and
# rdma_destroy_id inside the library: an endpoint's entry is forgotten when it is destroyed (a
# new id at its address inherits nothing), and an endpoint whose route the module never saw is
# logged once; so is a stream rsocket whose id the module never saw (its TOS is accepted, and
# its connections keep stock QoS).
#   symbolic_rdmacm_test.sh MODULE CLIENT STAND_IN
set -euo pipefail
module=$1
client=$2
rdmacm=$3
fail() { echo "FAIL: $*"; exit 1; }
readelf -d "$rdmacm" | grep -q 'SYMBOLIC\|FLAGS.*SYMBOLIC' ||
    objdump -d "$rdmacm" | grep -A40 '<rdma_create_ep>:' | grep -q 'call.*<rdma_create_id>' ||
    fail "the stand-in does not bind its own calls directly"
out=$(LD_PRELOAD="$module" RDMA_QOS_LOG=warn "$client" "$rdmacm" 2>"${TMPDIR:-/tmp}/symbolic.err") ||
    fail "client exited $?: $out $(cat "${TMPDIR:-/tmp}/symbolic.err")"
echo "$out"
grep -qx "rdma_create_ep 0" <<<"$out" || fail "rdma_create_ep"
grep -qx "rdma_qos_set_class 0" <<<"$out" || fail "rdma_qos_set_class"
grep -qx "rdma_create_id 0 at the same address yes; class none" <<<"$out" ||
    fail "the destroyed endpoint's class outlived it"
[ "$(grep -c 'rdma_create_ep resolved a route inside librdmacm' "${TMPDIR:-/tmp}/symbolic.err")" = 1 ] ||
    fail "not said once: $(cat "${TMPDIR:-/tmp}/symbolic.err")"
[ "$(grep -c 'rsocket ok rsetsockopt 0 rconnect 0 rclose 0' <<<"$out")" = 2 ] ||
    fail "rsockets over the stand-in"
[ "$(grep -c 'rsocket created its rdma_cm id inside librdmacm' "${TMPDIR:-/tmp}/symbolic.err")" = 1 ] ||
    fail "rsockets not said once: $(cat "${TMPDIR:-/tmp}/symbolic.err")"
echo PASS
