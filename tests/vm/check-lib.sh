# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host-side helpers shared by the VM groups' check scripts (sourced, bash). A check script sets
# `scenario` and `dir`, then uses these; the formulas are the RoCE v2 rules written out here
# independently of the code under test.
failures=0

fail() { echo "FAIL: $scenario: $*"; failures=$((failures + 1)); }

# RoCE v2 UDP source port of a 20-bit flow label.
fold() { echo $(( (($1 & 0x3FFF) ^ (($1 & 0xFC000) >> 14)) | 0xC000 )); }
# The RFC's CM-port label: h = dport * sport; h ^= h >> 16; h ^= h >> 8; & 0xFFFFF.
rfc_cm_label() {
    local h=$(( ($1 * $2) & 0xFFFFFFFF ))
    h=$(( h ^ (h >> 16) )); h=$(( h ^ (h >> 8) ))
    echo $(( h & 0xFFFFF ))
}
# Linux rdma_cm's label: (cm_src_port * 31 + cm_dst_port) & 0xFFFFF.
linux_cm_label() { echo $(( ($1 * 31 + $2) & 0xFFFFF )); }
# The QPN hash of plain verbs (the RFC's, Linux rdma_calc_flow_label).
qpn_label() {
    local v=$(( $1 * $2 ))
    v=$(( v ^ (v >> 20) )); v=$(( v ^ (v >> 40) ))
    echo $(( v & 0xFFFFF ))
}

# The scenario's results exist; show its guest log.
require_results() {
    [ -d "$dir" ] || { echo "FAIL: $scenario: no results in $dir (did the VM group run?)"; exit 1; }
    cat "$dir/log" 2>/dev/null || true
}

# Every named side (client, server) exited 0; show the log of one that did not.
require_exit_zero() {
    local side st
    for side in "$@"; do
        st=$(cat "$dir/$side.status" 2>/dev/null || echo missing)
        [ "$st" = 0 ] || { fail "$side exit status $st"; sed 's/^/  | /' "$dir/$side.log" 2>/dev/null || true; }
    done
}

# The scenario's capture as the tool ROCE_PCAP_DUMP prints it, into $tsv; shows its first N
# lines (the header and N-1 packets).
#   read_capture ROCE_PCAP_DUMP N
read_capture() {
    tsv=$("$1" "$dir/cap.pcap") || { fail "cannot read $dir/cap.pcap"; tsv=; }
    echo "$tsv" | awk -v n="$2" 'NR <= n'
}
# The packets of the capture, then its data packets and its MADs (QP1).
# Columns: 1 ip 2 src 3 dst 4 sport 5 flow_label 6 dscp 7 ecn 8 opcode 9 dest_qp 10 psn
#          11 mad_class 12 mad_attr 13 cm_service_id 14 cm_src_port
rows() { echo "$tsv" | tail -n +2; }
data_rows() { rows | awk -F'\t' '$9 != 1'; }
mad_rows() { rows | awk -F'\t' '$9 == 1'; }

# Data packets went from A to B and from B to A, and every one of them has VALUE in column COL;
# WHAT says what the others lack ("without DSCP 26").
#   require_data_both_ways A B COL VALUE WHAT
require_data_both_ways() {
    local a=$1 b=$2 col=$3 value=$4 what=$5 from to n bad
    for from in "$a" "$b"; do
        [ "$from" = "$a" ] && to=$b || to=$a
        n=$(data_rows | awk -F'\t' -v s="$from" -v t="$to" '$2 == s && $3 == t' | wc -l)
        [ "$n" -gt 0 ] || fail "no data packet from $from to $to"
        bad=$(data_rows | awk -F'\t' -v s="$from" -v t="$to" -v c="$col" -v v="$value" \
            '$2 == s && $3 == t && $c != v' | wc -l)
        [ "$bad" = 0 ] || fail "$bad of $n data packets from $from to $to $what"
    done
}

# Ends the check: the failure count, or PASS.
finish() {
    if [ "$failures" -gt 0 ]; then
        echo "$scenario: $failures failures"
        exit 1
    fi
    echo "PASS: $scenario"
}
