#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The demo: every sample service gets the SL the sample policy gives it from rdma-qos-sad (or,
# with a second argument, from OpenSM with the rdma-qos plugin in that directory), and the same
# answer OpenSM alone gives.
set -euo pipefail
sa=rdma-qos-sad
if [ $# -ge 2 ]; then
  out=$("$1" --json --plugin-dir "$2")
  sa="OpenSM + rdma-qos plugin"
else
  out=$("$1" --json)
fi
echo "$out"
sl_of() { jq -r --arg s "$1" '.paths[] | select(.service == $s) | .sl' <<<"$out"; }
expect() {
  local got; got=$(sl_of "$1")
  [ "$got" = "$2" ] || { echo "FAIL: '$1' got SL '$got', expected $2"; exit 1; }
}
expect "MPI (no Service-ID)" 0
expect "MPI control, QoS-Class 1" 1
expect "iSER (TCP 3260)" 3
expect "Lustre o2ib (TCP 987)" 2
expect "NFS/RDMA (TCP 20049)" 2
expect "NFS/RDMA, not a server" 0
expect "SDP (port 5000)" 5
expect "RDS (TCP 18634)" 4
expect "SRP to node008" 6
expect "Backup, QoS-Class 4" 7
mtu=$(jq -r '.paths[] | select(.service == "MPI control, QoS-Class 1") | .mtu' <<<"$out")
[ "$mtu" = 1024 ] || { echo "FAIL: low-latency MTU $mtu, expected 1024"; exit 1; }
diffs=$(jq -r '.differences' <<<"$out")
[ "$diffs" = 0 ] || { echo "FAIL: $diffs answers differ from OpenSM's"; exit 1; }
[ "$(jq -r '.sa' <<<"$out")" = "$sa" ] || { echo "FAIL: not $sa's answers"; exit 1; }
echo PASS
