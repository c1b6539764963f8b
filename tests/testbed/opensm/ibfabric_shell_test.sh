#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The test bed from the shell: ibfabric runs a command on the fabric, which queries the real SA
# with saquery at a chosen node, and tears down afterwards leaving no process.
set -euo pipefail
ibfabric=$1
policy=$(mktemp)
trap 'rm -f "$policy"' EXIT
printf 'qos-ulps\n  default : 4\nend-qos-ulps\n' > "$policy"

out=$("$ibfabric" --cas 4 --cas-per-leaf 2 --policy "$policy" -- bash -c '
  set -e
  lid() { awk -v id="$1" "\$1 == id { print \$2 }" "$IBFABRIC_NODES"; }
  echo "sock=$IBSIM_SOCKNAME"
  SIM_HOST=node002 LD_PRELOAD=$IBFABRIC_PRELOAD saquery -p --slid "$(lid node002)" --dlid "$(lid node003)"
  echo "lid4=$(lid node004)"
  # A host with two devices: the query from the second leaves by node004'"'"'s port.
  UMAD_MULTI_CA="mlx5_0/1=node001 mlx5_1/1=node004" LD_PRELOAD=$IBFABRIC_MULTI_CA \
    saquery -C mlx5_1 -p --slid "$(lid node004)" --dlid "$(lid node003)" | sed "s/^/multi: /"
')
echo "$out"
grep -Eq 'sl\.+0x4$' <<<"$out" || { echo "FAIL: expected sl 0x4"; exit 1; }
lid4=$(sed -n 's/^lid4=//p' <<<"$out")
grep -Eq "^multi:[[:space:]]+slid\.+$lid4\$" <<<"$out" || { echo "FAIL: expected slid $lid4 from mlx5_1"; exit 1; }
sock=$(sed -n 's/^sock=//p' <<<"$out")
[ -n "$sock" ] || { echo "FAIL: no socket name"; exit 1; }
if grep -lz "IBSIM_SOCKNAME=$sock" /proc/[0-9]*/environ 2>/dev/null; then
  echo "FAIL: processes left behind for $sock"; exit 1
fi

# The command's exit status is ibfabric's.
set +e
"$ibfabric" --cas 2 -- sh -c 'exit 7'
rc=$?
set -e
[ "$rc" -eq 7 ] || { echo "FAIL: exit status $rc, expected 7"; exit 1; }
echo PASS
