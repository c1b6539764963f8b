#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rdma-qos-run preloads the module into an unmodified program, which still runs normally, and
# exports only the interposed verbs and rdma_cm symbols and the rdma_qos.h API.
set -euo pipefail
run=$1
module=$2
fail() { echo "FAIL: $*"; exit 1; }

out=$("$run" sh -c 'echo "$LD_PRELOAD"')
[ "${out%%:*}" = "$module" ] || fail "LD_PRELOAD is '$out'"
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$run" sh -c 'echo "$LD_PRELOAD"')
[ "$out" = "$module:/lib/x86_64-linux-gnu/libc.so.6" ] || fail "existing LD_PRELOAD lost: '$out'"

# A real verbs program loads the module and exits as it does without it (here, without RDMA
# devices, both fail the same way).
set +e
ibv_devices >/dev/null 2>&1; plain=$?
"$run" ibv_devices >/dev/null 2>&1; preloaded=$?
set -e
[ "$plain" = "$preloaded" ] || fail "ibv_devices exits $preloaded under rdma-qos-run, $plain without"

exports=$(nm -D --defined-only "$module" | awk '{print $3}' | sort | tr '\n' ' ')
want="ibv_create_ah ibv_destroy_qp ibv_modify_qp rclose rconnect rdma_accept rdma_connect rdma_create_id \
rdma_destroy_id rdma_get_cm_event rdma_qos_get_class rdma_qos_get_service_id rdma_qos_query rdma_qos_set_class \
rdma_qos_set_service_id rdma_qos_version rdma_resolve_route rdma_set_option rsetsockopt "
[ "$exports" = "$want" ] || fail "exports: $exports"
# librdmacm is reached through dlsym only: programs without rdma_cm do not load it.
readelf -d "$module" | grep -q 'librdmacm' && fail "module links librdmacm"
readelf -d "$module" | grep -q SONAME && fail "module has a soname"

"$run" --help | grep -q 'Usage: rdma-qos-run' || fail "--help"
out=$("$run" --version)
[[ $out =~ ^rdma-qos-run\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version prints '$out'"
RDMA_QOS_PRELOAD_MODULE=/nonexistent "$run" true 2>&1 | grep -q 'not found' || fail "missing module"
echo PASS
