#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of the udev VM group: udev adds our unit to SYSTEMD_WANTS for a device with an
# Ethernet (RoCE) port, whichever port it is, and not for a device with InfiniBand ports only
# nor for a plain netdev.
#   check-udev.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
fail() { echo "FAIL: $scenario: $*"; exit 1; }
[ -d "$dir" ] || fail "no results in $dir (did the VM group run?)"
cat "$dir/log" 2>/dev/null || true
[ "$(cat "$dir/status" 2>/dev/null)" = 0 ] || fail "guest scenario failed"
[ -f "$dir/ports.txt" ] && cat "$dir/ports.txt"
# The SA responder's rule on rxe0's umad device: wanted only where the port is InfiniBand.
case $scenario in
    roce_umad_wants_no_sad | infiniband_umad_wants_sad)
        cat "$dir/umad.txt" 2>/dev/null || true
        grep -E 'SYSTEMD_WANTS|90-rdma-qos|PROGRAM|grep' "$dir/umad.log" || true
        [ "$(cat "$dir/umad.status" 2>/dev/null)" = 0 ] || fail "udevadm test failed on the umad device"
        grep -q '90-rdma-qos.rules:[0-9]* Running PROGRAM' "$dir/umad.log" ||
            fail "udev did not evaluate 90-rdma-qos.rules for the umad device"
        sad_wanted() { grep -q '^SYSTEMD_WANTS=.*rdma-qos-sad@rxe0:1.service' "$dir/umad.log"; }
        if [ "$scenario" = roce_umad_wants_no_sad ]; then
            if sad_wanted; then fail "rdma-qos-sad@rxe0:1 wanted on a RoCE port"; fi
        else
            sad_wanted || fail "rdma-qos-sad@rxe0:1 not wanted on an InfiniBand port"
        fi
        echo "PASS: $scenario"
        exit 0
        ;;
esac
grep -E 'SYSTEMD_WANTS|90-rdma-qos|PROGRAM|grep' "$dir/rxe0.log" || true
wants() { grep -q '^SYSTEMD_WANTS=.*rdma-qos-kernel@rxe0.service' "$dir/rxe0.log"; }
# udev read our rules file and ran its RoCE test on rxe0 (so a missing want is the rule's answer).
grep -q '90-rdma-qos.rules:[0-9]* Running PROGRAM' "$dir/rxe0.log" ||
    fail "udev did not evaluate 90-rdma-qos.rules for rxe0"
case $scenario in
    rxe_wants_kernel_apply)
        wants || fail "udev did not want rdma-qos-kernel@rxe0.service for rxe0"
        if grep -q 'rdma-qos-kernel@' "$dir/vA.log"; then fail "rule fired for a netdev"; fi
        ;;
    second_port_ethernet)
        wants || fail "port 2 on Ethernet (port 1 InfiniBand): rdma-qos-kernel@rxe0 not wanted"
        ;;
    infiniband_only)
        if wants; then fail "rule fired for a device without an Ethernet port"; fi
        grep -q '90-rdma-qos.rules:[0-9]* Command .* returned 1' "$dir/rxe0.log" ||
            fail "the RoCE test did not answer 'no Ethernet port'"
        [ "$(cat "$dir/rxe0.status" 2>/dev/null)" = 0 ] || fail "udevadm test failed on rxe0"
        ;;
    *) fail "unknown scenario $scenario" ;;
esac
echo "PASS: $scenario"
