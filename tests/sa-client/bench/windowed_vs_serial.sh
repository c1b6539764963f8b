#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Windowed vs one-at-a-time SA queries against OpenSM (10-rule policy) on ibsim. Prints the
# bench's JSON lines and the ratio of the best window to window 1; fails below 2.5x (the
# issue's target, measured on a quiet machine).
set -euo pipefail
ibfabric=$1
bench=$2
queries=${QUERIES:-5000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
  echo "qos-levels"
  echo "  qos-level"; echo "    name: DEFAULT"; echo "    sl: 0"; echo "  end-qos-level"
  for i in $(seq 1 10); do
    echo "  qos-level"; echo "    name: L$i"; echo "    sl: $((i % 15 + 1))"; echo "  end-qos-level"
  done
  echo "end-qos-levels"
  echo "qos-match-rules"
  for i in $(seq 1 10); do
    printf '  qos-match-rule\n    service-id: 0x%X\n    qos-level-name: L%d\n  end-qos-match-rule\n' \
      $((0x1060CB0 + i)) "$i"
  done
  echo "end-qos-match-rules"
} > "$dir/policy.conf"
"$ibfabric" --policy "$dir/policy.conf" -- bash -c \
  "SIM_HOST=node001 LD_PRELOAD=\$IBFABRIC_PRELOAD '$bench' --queries $queries --service-id 0x1060CB5 --dlids 3,4,5,6" \
  | tee "$dir/out.json"
python3 - "$dir/out.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
serial = next(r for r in rows if r["window"] == 1)["qps"]
best = max(rows, key=lambda r: r["qps"])
ratio = best["qps"] / serial
print(f"window 1: {serial:.0f} q/s; best: window {best['window']} {best['qps']:.0f} q/s; ratio {ratio:.2f}x")
if any(r["failed"] for r in rows):
    sys.exit("FAIL: some queries failed")
sys.exit(0 if ratio >= 2.5 else "FAIL: windowed client below 2.5x one-at-a-time")
PY
