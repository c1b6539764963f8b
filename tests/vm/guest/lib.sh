# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Guest-side library of the RoCE test bed (bash, sourced by a group script inside the VM).
# Builds the topology of Documentation/testing.md: one veth pair vA/vB in the initial network
# namespace, policy routing that forces traffic between 10.0.0.1/fd00::1 and 10.0.0.2/fd00::2
# across it, and soft-RoCE devices rxe0 on vA (side A) and rxe1 on vB (side B).
# Forks cost ~60 ms under TCG: prefer bash builtins and batched ip/rdma commands.

RQ_PORT_BASE=${RQ_PORT_BASE:-7470}

rq_log() { printf '%s\n' "$*" >&2; }

# A sleep without a fork: a read that times out on a pipe nobody writes to.
exec {RQ_SLEEP_FD}<> <(:)
rq_sleep() { read -r -t "$1" -u "$RQ_SLEEP_FD" || true; }

# Writes to /proc/sys without forking sysctl.
rq_sysctl() { printf '%s\n' "$2" > "/proc/sys/${1//.//}"; }

rq_setup() {
    modprobe -d "$RQ_KROOT" -S "$RQ_KVER" -a rdma_rxe ib_uverbs rdma_cm rdma_ucm veth configfs ||
        return 1
    ip -batch - <<'IP' || return 1
link add vA type veth peer name vB
link set lo up
link set vA up
link set vB up
addr add 10.0.0.1/32 dev vA
addr add 10.0.0.2/32 dev vB
addr add fd00::1/128 dev vA nodad
addr add fd00::2/128 dev vB nodad
rule add pref 1000 lookup local
rule del pref 0 lookup local
rule add pref 10 iif vA lookup local
rule add pref 11 iif vB lookup local
rule add pref 100 to 10.0.0.2 lookup 102
rule add pref 101 to 10.0.0.1 lookup 101
route add 10.0.0.2/32 dev vA src 10.0.0.1 table 102
route add 10.0.0.1/32 dev vB src 10.0.0.2 table 101
IP
    # The same for IPv6 (ip -batch takes no per-line family).
    ip -6 -batch - <<'IP' || return 1
rule add pref 1000 lookup local
rule del pref 0 lookup local
rule add pref 10 iif vA lookup local
rule add pref 11 iif vB lookup local
rule add pref 100 to fd00::2 lookup 102
rule add pref 101 to fd00::1 lookup 101
route add fd00::2/128 dev vA src fd00::1 table 102
route add fd00::1/128 dev vB src fd00::2 table 101
IP
    local c
    for c in all vA vB; do rq_sysctl "net.ipv4.conf.$c.accept_local" 1; done
    rdma -b - <<'RDMA' || return 1
link add rxe0 type rxe netdev vA
link add rxe1 type rxe netdev vB
RDMA
    rq_wait_gid rxe0 10.0.0.1 && rq_wait_gid rxe1 10.0.0.2 &&
        rq_wait_gid rxe0 fd00::1 && rq_wait_gid rxe1 fd00::2
}

# Prints the GID table index of ADDR (IPv4 or the fd00:: addresses) on DEV's port 1 (RoCE v2).
rq_gid_index() {
    local dev=$1 addr=$2 want f gid type i
    if [[ $addr == *.* ]]; then
        local IFS=. a b c d
        read -r a b c d <<<"$addr"
        printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
    else
        # Only the short fd00::N form used by the test bed.
        printf -v want 'fd00:0000:0000:0000:0000:0000:0000:%04x' "0x${addr##*:}"
    fi
    for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
        i=${f##*/}
        read -r gid < "$f" 2>/dev/null || continue
        [ "$gid" = "$want" ] || continue
        read -r type < "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i" 2>/dev/null
        [ "$type" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}

rq_wait_gid() {
    local n
    for ((n = 0; n < 100; n++)); do
        rq_gid_index "$1" "$2" >/dev/null && return 0
        rq_sleep 0.05
    done
    rq_log "rq_wait_gid: no RoCE v2 GID for $2 on $1"
    return 1
}

# rq_side A|B CMD...: runs CMD on one side with its addresses in the environment:
# RQ_DEV (rxe0/rxe1), RQ_NETDEV (vA/vB), RQ_IP4, RQ_IP6 (local) and RQ_PEER4, RQ_PEER6.
# Ours (e.g. under LD_PRELOAD) and unmodified tools run the same way.
rq_side() {
    local side=$1
    shift
    (
        if [ "$side" = A ]; then
            export RQ_DEV=rxe0 RQ_NETDEV=vA RQ_IP4=10.0.0.1 RQ_IP6=fd00::1 \
                RQ_PEER4=10.0.0.2 RQ_PEER6=fd00::2
        else
            export RQ_DEV=rxe1 RQ_NETDEV=vB RQ_IP4=10.0.0.2 RQ_IP6=fd00::2 \
                RQ_PEER4=10.0.0.1 RQ_PEER6=fd00::1
        fi
        exec "$@"
    )
}

# Waits until an rdma_cm id listens on PORT (servers give no other sign of being ready).
rq_wait_listen() {
    local port=$1 n out
    for ((n = 0; n < 100; n++)); do
        out=$(rdma resource show cm_id 2>/dev/null)
        [[ $out == *LISTEN*:"$port "* || $out == *LISTEN*:"$port"$'\n'* || $out == *LISTEN*:"$port" ]] &&
            return 0
        rq_sleep 0.05
    done
    rq_log "rq_wait_listen: nothing listens on $port"
    return 1
}

# rq_capture_start FILE: captures RoCE v2 on vA (it sees both directions) into FILE.
rq_capture_start() {
    RQ_CAPTURE_ERR=$1.err
    : > "$RQ_CAPTURE_ERR"
    tcpdump -U --immediate-mode -n -i vA -Z root -w "$1" 'udp dst port 4791' 2>"$RQ_CAPTURE_ERR" &
    RQ_CAPTURE_PID=$!
    local n line
    for ((n = 0; n < 200; n++)); do
        read -r line < "$RQ_CAPTURE_ERR" 2>/dev/null
        [[ $line == *listening* ]] && return 0
        rq_sleep 0.05
    done
    rq_log "rq_capture_start: tcpdump did not start"
    return 1
}

# Packets still in flight are lost when tcpdump stops at once: give it half a second.
rq_capture_stop() {
    rq_sleep 0.5
    kill -INT "$RQ_CAPTURE_PID" 2>/dev/null
    wait "$RQ_CAPTURE_PID" 2>/dev/null
    return 0
}

# rq_scenario NAME FUNCTION: runs one scenario with its own directory $RQ_RESULTS/NAME as the
# working directory (log, pcap, whatever the check reads) and records its status there.
rq_scenario() {
    local name=$1 fn=$2 dir=$RQ_RESULTS/$1 status
    mkdir -p "$dir"
    ( cd "$dir" && "$fn" ) >"$dir/log" 2>&1
    status=$?
    echo "$status" > "$dir/status"
    rq_log "scenario $name: status $status"
}

# Waits until a TCP socket listens on PORT (IPv4 or IPv6), read from /proc without forking.
rq_wait_tcp_listen() {
    local hex n f line
    printf -v hex ':%04X 00000000:0000 0A' "$1"
    local hex6
    printf -v hex6 ':%04X 00000000000000000000000000000000:0000 0A' "$1"
    for ((n = 0; n < 200; n++)); do
        for f in /proc/net/tcp /proc/net/tcp6; do
            while read -r line; do
                [[ $line == *"$hex"* || $line == *"$hex6"* ]] && return 0
            done < "$f"
        done
        rq_sleep 0.05
    done
    rq_log "rq_wait_tcp_listen: nothing listens on $1"
    return 1
}
