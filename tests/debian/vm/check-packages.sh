#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Checks one scenario of the debian.vm.packages group from what the guest left in DIR.
#   check-packages.sh SCENARIO DIR [ROCE_PCAP_DUMP]
set -uo pipefail
scenario=$1
d=$2
fail() { echo "FAIL: $scenario: $*"; for f in "$d"/*; do echo "== $f"; cat "$f"; done; exit 1; }
[ -d "$d" ] || fail "no results (the guest did not reach this scenario)"
case $scenario in
    kernel_unit_on_rxe)
        grep -qx 'Result=success' "$d/show" || fail "the configfs unit did not succeed"
        grep -qx '104' "$d/tos" || fail "default_roce_tos is not 104"
        ;;
    lsd_ready_and_reload)
        grep -qx active "$d/socket" || fail "rdma-qos-lsd.socket is not active"
        grep -qx 'Type=notify' "$d/started" || fail "not Type=notify"
        grep -qx 'ActiveState=active' "$d/started" || fail "not active after start"
        grep -q '^StatusText=answering the kernel' "$d/started" || fail "no status text"
        grep -qx 'reload exit 0' "$d/reload" || fail "systemctl reload failed"
        grep -qx 'ActiveState=active' "$d/reloaded" || fail "not active after reload"
        [ "$(grep MainPID "$d/started")" = "$(grep MainPID "$d/reloaded")" ] || fail "reload restarted it"
        grep -q '^StatusText=.*configuration reloaded 1 times' "$d/reloaded" || fail "the status does not count the reload"
        grep -q '^Reloaded rdma-qos-lsd.service' "$d/journal" || fail "no reload in the journal"
        ;;
    sad_skipped_on_roce)
        grep -qx 'ExecMainStartTimestampMonotonic=0' "$d/after-udev" || fail "udev started rdma-qos-sad@ on a RoCE port"
        grep -qx 'ExecMainStartTimestampMonotonic=0' "$d/after-start" || fail "the ExecCondition did not skip the RoCE port"
        grep -qx 'ActiveState=inactive' "$d/after-start" || fail "the unit is not inactive on a RoCE port"
        grep -qx 'Result=success' "$d/after-start" || fail "a skipped unit counts as failed"
        grep -qx 'NRestarts=0' "$d/after-start" || fail "the unit was restarted on a RoCE port"
        ;;
    bad_policy_fails_once)
        grep -qx 'ActiveState=failed' "$d/show" || fail "the unit did not fail"
        grep -qx 'ExecMainStatus=78' "$d/show" || fail "exit status is not 78"
        grep -qx 'NRestarts=0' "$d/show" || fail "the unit was restarted"
        grep -q "bad-policy.conf:2:3: error: qos-level 'DEFAULT' has no 'sl'" "$d/journal-err" ||
            fail "the diagnostic is not in the journal at priority err"
        ;;
    plugin_found_by_the_loader)
        grep -qx 'install ok installed' "$d/status" || fail "rdma-qos-opensm-plugin is not installed"
        grep -qx 'dlopen ok' "$d/dlopen" || fail "dlopen(\"librdma-qos-opensm.so\") failed"
        ;;
    *) fail "unknown scenario" ;;
esac
echo PASS
