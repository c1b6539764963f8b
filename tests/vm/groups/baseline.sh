# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Guest side of the `baseline` VM group: the kernel's own RoCE behaviour (Linux 6.1 + rxe) with
# unmodified tools, one scenario per directory of results. The host-side checks are in
# check-baseline.sh; each scenario here only runs the tools and records what they did.
. "$(dirname "${BASH_SOURCE[0]}")/../guest/lib.sh"

rq_both_passed() {
    local c s
    read -r c < client.status && read -r s < server.status && [ "$c" = 0 ] && [ "$s" = 0 ]
}

# Side B (rxe1, 10.0.0.2 / fd00::2) serves, side A (rxe0) connects, in every scenario.
# Scenario ports are distinct so the captures never mix.

# rping_run PORT SERVER_ADDR CLIENT_ADDR
rping_run() {
    rq_capture_start cap.pcap || return 1
    rq_side B timeout 30 rping -s -a "$2" -p "$1" -C 3 -v > server.log 2>&1 &
    local server=$!
    rq_wait_listen "$1" || { kill "$server"; return 1; }
    rq_side A timeout 30 rping -c -a "$2" -I "$3" -p "$1" -C 3 -v > client.log 2>&1
    echo $? > client.status
    wait "$server"
    echo $? > server.status
    rq_capture_stop
    rq_both_passed
}

# ucmatose_run PORT SERVER_ADDR CLIENT_ADDR [CLIENT_OPTIONS...]
ucmatose_run() {
    local port=$1 saddr=$2 caddr=$3
    shift 3
    rq_capture_start cap.pcap || return 1
    rq_side B timeout 30 ucmatose -b "$saddr" -p "$port" > server.log 2>&1 &
    local server=$!
    rq_wait_listen "$port" || { kill "$server"; return 1; }
    rq_side A timeout 30 ucmatose -s "$saddr" -b "$caddr" -p "$port" "$@" > client.log 2>&1
    echo $? > client.status
    wait "$server"
    echo $? > server.status
    rq_capture_stop
    rq_both_passed
}

# pingpong_run PORT SERVER_ADDR CLIENT_ADDR: the GIDs of these addresses carry the RC traffic;
# the QPN exchange goes over TCP/IPv4 (the server listens on the first address getaddrinfo
# gives, 0.0.0.0).
pingpong_run() {
    local sgid cgid
    sgid=$(rq_gid_index rxe1 "$2") && cgid=$(rq_gid_index rxe0 "$3") || return 1
    rq_capture_start cap.pcap || return 1
    rq_side B timeout 30 ibv_rc_pingpong -d rxe1 -g "$sgid" -p "$1" -n 5 -r 16 -e > server.log 2>&1 &
    local server=$!
    rq_wait_tcp_listen "$1" || { kill "$server"; return 1; }
    rq_side A timeout 30 ibv_rc_pingpong -d rxe0 -g "$cgid" -p "$1" -n 5 -r 16 -e 10.0.0.2 > client.log 2>&1
    echo $? > client.status
    wait "$server"
    echo $? > server.status
    rq_capture_stop
    rq_both_passed
}

rping_ipv4() { rping_run 7471 10.0.0.2 10.0.0.1; }
rping_ipv6() { rping_run 7472 fd00::2 fd00::1; }
ucmatose_ipv4() { ucmatose_run 7473 10.0.0.2 10.0.0.1; }
ucmatose_ipv6() { ucmatose_run 7474 fd00::2 fd00::1; }
# TOS 0x68: DSCP 26 (AF31), ECN bits 0.
ucmatose_tos() { ucmatose_run 7475 10.0.0.2 10.0.0.1 -t 0x68; }
# configfs default_roce_tos 72 (DSCP 18) on the active side's device only.
ucmatose_configfs_tos() {
    local cfs=/sys/kernel/config/rdma_cm/rxe0
    [ -d /sys/kernel/config/rdma_cm ] || mount -t configfs none /sys/kernel/config || return 1
    mkdir -p "$cfs" && echo 72 > "$cfs/ports/1/default_roce_tos" || return 1
    ucmatose_run 7476 10.0.0.2 10.0.0.1
    local status=$?
    rmdir "$cfs"
    return $status
}
rc_pingpong_ipv4() { pingpong_run 7477 10.0.0.2 10.0.0.1; }
rc_pingpong_ipv6() { pingpong_run 7478 fd00::2 fd00::1; }

rq_setup > "$RQ_RESULTS/setup.log" 2>&1 || { cat "$RQ_RESULTS/setup.log"; exit 1; }
for s in ${RQ_SCENARIOS:-rping_ipv4 rping_ipv6 ucmatose_ipv4 ucmatose_ipv6 ucmatose_tos \
    ucmatose_configfs_tos rc_pingpong_ipv4 rc_pingpong_ipv6}; do
    rq_scenario "$s" "$s"
done
exit 0
