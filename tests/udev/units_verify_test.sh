#!/usr/bin/env bash
# The systemd units pass `systemd-analyze verify` (syntax, directives, executables) with an
# instance name, and name the command they run.
set -euo pipefail
dir=$1
bin=$2
lsd=${3:-}
sad=${4:-}
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$dir/rdma-qos-kernel@.service" "$work/rdma-qos-kernel@rxe0.service"
grep -q "^ExecStart=$bin kernel apply --dev %I$" "$work/rdma-qos-kernel@rxe0.service" || fail "ExecStart"
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$work/rdma-qos-kernel@rxe0.service" 2>&1 || true)
echo "$out"
# Without a running systemd, references to units of the host (rdma-hw.target) may be unknown;
# anything about our own file is a failure.
if grep -E "rdma-qos-kernel@rxe0.service:[0-9]+" <<<"$out"; then fail "unit file problems"; fi
if grep -qiE "unknown (key|section)|invalid|not executable|no such file" <<<"$out"; then fail "verify"; fi

# rdma-qos-lsd: the socket holds the kernel's path-query group, the service runs the daemon
# with only CAP_NET_ADMIN, after rdma-hw.target.
if [ -n "$lsd" ]; then
    cp "$dir/rdma-qos-lsd.socket" "$dir/rdma-qos-lsd.service" "$work/"
    grep -qx "ListenNetlink=rdma 4" "$work/rdma-qos-lsd.socket" || fail "ListenNetlink"
    grep -qx "ExecStart=$lsd --foreground" "$work/rdma-qos-lsd.service" || fail "lsd ExecStart"
    grep -qx "CapabilityBoundingSet=CAP_NET_ADMIN" "$work/rdma-qos-lsd.service" || fail "capabilities"
    grep -q "^After=.*rdma-hw.target" "$work/rdma-qos-lsd.service" || fail "ordering"
    out=$(cd "$work" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
        "$work/rdma-qos-lsd.socket" "$work/rdma-qos-lsd.service" 2>&1 || true)
    echo "$out"
    if grep -E "rdma-qos-lsd\.(socket|service):[0-9]+" <<<"$out"; then fail "lsd unit file problems"; fi
    if grep -qiE "unknown (key|section)|invalid|not executable|no such file|failed to parse" <<<"$out"; then
        fail "lsd verify"
    fi
fi

# The SA responder's unit, instance <ca>:<port>, runs the daemon in the foreground at that port.
if [ -n "$sad" ]; then
  # Real instances are <ca>:<port> (mlx5_0:1); systemd-analyze 252 cannot verify a file whose
  # name holds a colon ("Couldn't process aliases"), so the check uses a CA-only instance.
  unit="$work/rdma-qos-sad@mlx5_0.service"
  cp "$dir/rdma-qos-sad@.service" "$unit"
  grep -q "^ExecStart=$sad --foreground --ca %I \$RDMA_QOS_SAD_OPTIONS$" "$unit" || fail "sad ExecStart"
  grep -q "^BindsTo=sys-subsystem-rdma-devices-%i-umad.device$" "$unit" || fail "sad BindsTo"
  out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$unit" 2>&1 || true)
  echo "$out"
  if grep -E "rdma-qos-sad@mlx5_0.service:[0-9]+" <<<"$out"; then fail "sad unit file problems"; fi
  if grep -qiE "unknown (key|section)|invalid|not executable|no such file" <<<"$out"; then fail "sad verify"; fi
fi
echo PASS
