#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Self-tests of run-vm.sh: the guest's exit status comes back; a hung guest is killed at the
# timeout and reported with its console log; a runner killed with SIGKILL (as a ctest timeout
# does) takes QEMU with it. Every case ends with no QEMU left for its results directory.
#   run-vm-test.sh exit-status|timeout|killed-runner KERNEL_DIR RESULTS_DIR
set -uo pipefail
case_=$1
kdir=$2
res=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run_vm=$here/../run-vm.sh
mkdir -p "$res"
res=$(cd "$res" && pwd)

# Pids of QEMU processes serving this results directory.
qemu_pids() {
    local d pid
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        [ "$(cat "$d/comm" 2>/dev/null)" = qemu-system-x86 ] || continue
        tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -qF -- "path=$res," && echo "$pid"
    done
}

no_qemu_left() {
    local n
    for n in 1 2 3 4 5 6 7 8 9 10; do
        [ -z "$(qemu_pids)" ] && return 0
        sleep 0.5
    done
    echo "FAIL: QEMU left behind: $(qemu_pids)"
    return 1
}

case $case_ in
    exit-status)
        "$run_vm" "$kdir" "$res" "$here/guest-exit3.sh" 60
        rc=$?
        [ "$rc" = 3 ] || { echo "FAIL: run-vm.sh exited $rc, expected the guest's 3"; exit 1; }
        ;;
    timeout)
        out=$("$run_vm" "$kdir" "$res" "$here/guest-hang.sh" 20 2>&1)
        rc=$?
        echo "$out"
        [ "$rc" != 0 ] || { echo "FAIL: a hung guest passed"; exit 1; }
        grep -q 'did not power off within 20 s' <<<"$out" || { echo "FAIL: no timeout report"; exit 1; }
        grep -q 'guest: hanging on purpose' <<<"$out" ||
            { echo "FAIL: the console log was not shown"; exit 1; }
        ;;
    killed-runner)
        "$run_vm" "$kdir" "$res" "$here/guest-hang.sh" 100 > "$res.runner.log" 2>&1 &
        runner=$!
        for n in $(seq 1 40); do
            [ -n "$(qemu_pids)" ] && break
            kill -0 "$runner" 2>/dev/null || break
            sleep 0.25
        done
        if [ -z "$(qemu_pids)" ]; then
            echo "FAIL: QEMU never started"
            cat "$res.runner.log"
            kill -KILL "$runner" 2>/dev/null
            exit 1
        fi
        sleep 2
        kill -KILL "$runner"
        wait "$runner" 2>/dev/null
        ;;
    *) echo "usage: $0 exit-status|timeout|killed-runner KERNEL_DIR RESULTS_DIR"; exit 2 ;;
esac
no_qemu_left || exit 1
echo "PASS: $case_"
