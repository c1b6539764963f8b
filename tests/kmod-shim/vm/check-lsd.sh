#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side check of the rdma-qos-lsd scenarios of the kmod-shim `kernel` VM group: the daemon
# on the real Linux 6.1 kernel's local-service channel (NETLINK_RDMA 20, group RDMA_NL_GROUP_LS
# 3, mask 4 in /proc/net/netlink). With --sa-timeout-ms 1000 --sa-retries 2 the daemon asks
# for 4180 ms (rdma-qos-lsd(8): 3 attempts of 1000 ms, 80 ms of backoffs, 100 ms, plus 1 s);
# after a refusal it answers F_ERR within 2000 - 500 = 1500 ms. The kernel keeps its timeout in
# a variable of sa_query.c that it shows nowhere (no sysfs file, module parameter or debugfs
# entry), so its ACK of SET_TIMEOUT is what can be checked. No RESOLVE is expected: rxe is RoCE.
#   check-lsd.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
scenario=$1
dir=$2
# shellcheck source=/dev/null
. "$(dirname "${BASH_SOURCE[0]}")/../../vm/check-lib.sh"

require_results
for f in lsd.log lsd2.log netlink-one.txt netlink-two.txt stats.json stats.prom; do
    [ -f "$dir/$f" ] && { echo "--- $f"; cat "$dir/$f"; }
done

has() { grep -qF -- "$2" "$dir/$1"; }
# The netlink port a daemon listens on, from its first log line.
port_of() {
    sed -n 's/.*listening on netlink family 20 group 3 as port \([0-9]*\);.*/\1/p' "$dir/$1" |
        head -n 1
}
# member FILE PORT: /proc/net/netlink (sk Eth Pid Groups ...) has PORT on NETLINK_RDMA with
# group 3 (mask 4) joined.
member() {
    local eth pid groups rest
    while read -r _ eth pid groups rest; do
        [ "$eth" = 20 ] && [ "$pid" = "$2" ] && (( 0x$groups & 4 )) && return 0
    done < <(tail -n +2 "$dir/$1")
    return 1
}

# The error field of the first datagram --dump-netlink kept, which must be the kernel's
# NLMSG_ERROR (type 2) answering SET_TIMEOUT: 0 for an ACK, -errno for a refusal.
first_dump_error() {
    local first type
    first=$(find "$dir/netlink" -name 'netlink-*' | sort -t- -k3 -n | head -n 1)
    [ -n "$first" ] || { echo "nothing dumped"; return; }
    type=$(od -An -tu2 -j4 -N2 "$first" | tr -d ' ')
    [ "$type" = 2 ] || { echo "type $type"; return; }
    od -An -td4 -j16 -N4 "$first" | tr -d ' '
}

case $scenario in
    lsd_real_kernel)
        require_exit_zero lsd lsd2
        has lsd.log "the kernel accepted SET_TIMEOUT: it waits 4180 ms for an answer" ||
            fail "no ACK of SET_TIMEOUT (4180 ms) from the kernel"
        if grep -E 'refused|initial network namespace|error:' "$dir/lsd.log"; then
            fail "the daemon reported a problem on the real kernel"
        fi
        one=$(port_of lsd.log)
        two=$(port_of lsd2.log)
        if [ -z "$one" ] || [ -z "$two" ]; then fail "no netlink port in the logs"; fi
        member netlink-one.txt "$one" || fail "port $one has not joined NETLINK_RDMA group 3"
        member netlink-two.txt "$two" || fail "port $two has not joined NETLINK_RDMA group 3"
        grep -qE "another responder listens on the kernel's path-query group: netlink port $two, pid [0-9]+ \(rdma-qos-lsd\)" \
            "$dir/lsd.log" || fail "the second listener (port $two) was not reported"
        has lsd.log "the responder at netlink port $two has gone" ||
            fail "the second listener's leaving was not reported"
        # The first daemon holds /run/rdma-qos/lsd.sock; the second runs without one.
        has stats.json '"requests"' || fail "rdma-qos kernel stats --json: $(cat "$dir/stats.json")"
        has stats.prom 'rdma_qos_lsd_requests_total{kind="all"} 0' ||
            fail "rdma-qos kernel stats --format prometheus: $(cat "$dir/stats.prom")"
        has lsd2.log "no control socket" || fail "the second daemon did not say it has no control socket"
        ack=$(first_dump_error)
        [ "$ack" = 0 ] || fail "--dump-netlink: the first datagram is not the kernel's ACK ($ack)"
        grep -qE "another responder .*netlink port $one, pid [0-9]+ \(rdma-qos-lsd\)" "$dir/lsd2.log" ||
            fail "the second daemon did not report the first (port $one) at its start"
        ;;
    lsd_other_netns)
        require_exit_zero lsd
        has lsd.log "the kernel refused SET_TIMEOUT (4180 ms): Invalid argument (the kernel takes it only from the initial network namespace)" ||
            fail "no refusal of SET_TIMEOUT (EINVAL) reported"
        has lsd.log "F_ERR now comes after 1500 ms" || fail "the deadline was not lowered to 1500 ms"
        has lsd.log "not in the initial network namespace (" || fail "no namespace warning"
        if has lsd.log "accepted SET_TIMEOUT"; then fail "SET_TIMEOUT accepted outside init_net"; fi
        refusal=$(first_dump_error)
        [ "$refusal" = -22 ] ||
            fail "--dump-netlink: the first datagram is not the kernel's EINVAL ($refusal)"
        ;;
    *) fail "unknown scenario $scenario" ;;
esac
finish
