#!/usr/bin/env bash
# Host side of the rdmacm-qos `bench` VM group: cmtime's per-step totals for the same number
# of connections with and without the preload module, three alternating rounds each. Reports
# the median round of each; fails when the preload adds more than 5% to the setup (resolve
# route + create QP + connect). cmtime runs the connections concurrently and reports totals per
# step, so this is the added cost per connection on average, not a per-connection p99.
#   check-bench.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
dir=$2
[ -d "$dir" ] || { echo "FAIL: no results in $dir (did the VM group run?)"; exit 1; }
# step_ms LOG STEP: the step's total milliseconds.
step_ms() { awk -F: -v s="$2" '$1 ~ "^"s" *$" { split($2, f, " "); print f[1] }' "$1"; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
declare -A setup
for kind in plain preload; do
    vals=()
    for round in 1 2 3; do
        log=$dir/client-$kind$round.log
        st=$(cat "$dir/client-$kind$round.status" 2>/dev/null || echo missing)
        [ "$st" = 0 ] || { echo "FAIL: $kind round $round exit status $st"; cat "$log" || true; exit 1; }
        r=$(step_ms "$log" "resolve route") q=$(step_ms "$log" "create qp") c=$(step_ms "$log" connect)
        [ -n "$r" ] && [ -n "$q" ] && [ -n "$c" ] || { echo "FAIL: no cmtime table in $log"; exit 1; }
        vals+=("$(echo "$r + $q + $c" | bc -l)")
        echo "$kind round $round: resolve route $r ms, create qp $q ms, connect $c ms"
    done
    setup[$kind]=$(median3 "${vals[@]}")
done
pct=$(echo "(${setup[preload]} - ${setup[plain]}) * 100 / ${setup[plain]}" | bc -l)
printf 'median setup (resolve route + create qp + connect), all connections: plain %.2f ms, preload %.2f ms: %+.1f%%\n' \
    "${setup[plain]}" "${setup[preload]}" "$pct"
if [ "$(echo "$pct > 5" | bc -l)" = 1 ]; then
    echo "FAIL: the preload adds more than 5% to connection setup"
    exit 1
fi
echo "PASS: setup_time"
