#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Boots the RoCE test bed's VM once and runs one guest script in it (a group of scenarios).
#   run-vm.sh KERNEL_DIR RESULTS_DIR GUEST_SCRIPT [TIMEOUT_SECONDS]
# The guest sees the host's / read-only and RESULTS_DIR read-write at the same path; it writes
# its logs, pcaps and exit-status there. Exits with the guest script's status; on a timeout or a
# guest that never reported, kills QEMU, prints the console log and fails.
# RDMA_QOS_VM_ACCEL=tcg|kvm overrides the accelerator choice; RDMA_QOS_VM_SYSTEMD=1 boots systemd
# in the guest.
set -euo pipefail
kdir=$1
results=$2
script=$3
limit=${4:-150}

# shellcheck disable=SC1091
. "$kdir/kernel.env"
mkdir -p "$results"
results=$(cd "$results" && pwd)
script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")
# Start from an empty results directory so no stale status passes for a fresh one; only a
# directory this script used before (marker, or a console log) is ever emptied.
marker=$results/.rdma-qos-vm-results
if [ -n "$(ls -A "$results")" ] && [ ! -f "$marker" ] && [ ! -f "$results/console.log" ]; then
    echo "run-vm: $results is not empty and not a results directory of ours" >&2
    exit 1
fi
find "$results" -mindepth 1 -delete
touch "$marker"

# /dev/kvm alone is not enough: on this kind of host it may be a software virtualiser (kvm_pvm)
# on which a stock kernel does not boot in useful time. Hardware KVM means kvm_intel/kvm_amd.
accel=${RDMA_QOS_VM_ACCEL:-}
if [ -z "$accel" ]; then
    accel=tcg
    if [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
        accel=kvm
    fi
fi
case $accel in
    kvm) accel_args=(-accel kvm -cpu host) ;;
    *) accel_args=(-accel tcg,thread=multi -cpu max) ;;
esac

console=$results/console.log
# The guest mounts tmpfs over /tmp, /run, /var/tmp, /root and /dev/shm; the trees it runs from
# (this checkout, the build directory holding the kernel, the guest script's directory) stay
# visible even when they live there.
source_tree=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_tree=$(cd "$kdir/../../.." && pwd)
expose="$source_tree,$build_tree,$(dirname "$script")"
cmdline="console=ttyS0 panic=-1 quiet rq_results=$results rq_run=$script rq_expose=$expose"
# RDMA_QOS_VM_SYSTEMD=1: the guest boots systemd (see tests/vm/init).
if [ "${RDMA_QOS_VM_SYSTEMD:-0}" = 1 ]; then cmdline="$cmdline rq_systemd=1"; fi
start=$(date +%s)
# Both setpriv layers make QEMU die with this script even when it is SIGKILLed (ctest timeout);
# timeout bounds the boot itself.
set +e
setpriv --pdeathsig KILL -- timeout -k 5 "$limit" \
    setpriv --pdeathsig KILL -- qemu-system-x86_64 \
    -nodefaults -no-user-config -display none -no-reboot \
    "${accel_args[@]}" -smp 2 -m 1024 \
    -kernel "$VMLINUZ" -initrd "$INITRD" -append "$cmdline" \
    -serial "file:$console" \
    -virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$results,mount_tag=results,security_model=none,multidevs=remap" \
    </dev/null
qemu_status=$?
set -e
echo "run-vm: QEMU ($accel) ran $(( $(date +%s) - start )) s, exit $qemu_status"

if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
    echo "run-vm: FAIL: the guest did not power off within ${limit} s; console log:" >&2
    tail -n 100 "$console" >&2 || true
    exit 1
fi
if [ ! -f "$results/exit-status" ]; then
    echo "run-vm: FAIL: the guest reported no exit status (QEMU exit $qemu_status); console log:" >&2
    tail -n 100 "$console" >&2 || true
    exit 1
fi
status=$(cat "$results/exit-status")
if [ "$status" != 0 ]; then
    echo "run-vm: guest script exited $status; console log:" >&2
    tail -n 60 "$console" >&2 || true
fi
exit "$status"
