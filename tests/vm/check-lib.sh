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

# Ends the check: the failure count, or PASS.
finish() {
    if [ "$failures" -gt 0 ]; then
        echo "$scenario: $failures failures"
        exit 1
    fi
    echo "PASS: $scenario"
}
