#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Host side of the rdmacm-qos `bench` VM group: per-connection setup times (cm_setup_time: route
# resolution + QP creation, then rdma_connect -> ESTABLISHED, connections one after the other)
# with and without the preload module, and (kind tos, when the run has it) without it but with
# the client setting the level's TOS itself, taking turns. Reports median and p99 of each step
# over every connection of a kind, and each round's medians side by side. Fails when the preload
# adds more than 5% to the median setup time of plain, as the mean over rounds of each round's
# difference of medians: the kinds take turns within a round, so a round compares like with
# like, while rounds run at different speeds (the guest's phases: 4.5 to 11 ms a connection in
# one run), and a median pooled over rounds at different levels moved with which rounds
# straddled it (one run: +6.4% pooled, its rounds +2.1% to +5.9%, +4.3% on average; ten runs
# of one commit: pooled +2.6% to +6.4%, per round +3.4% to +4.4%, the same mean). The tos
# kind's figures are reported, not judged: they tell what the level's TOS costs the kernel from
# what the module costs beyond it.
#   check-bench.sh SCENARIO RESULTS_DIR ROCE_PCAP_DUMP
set -euo pipefail
dir=$2
[ -d "$dir" ] || { echo "FAIL: no results in $dir (did the VM group run?)"; exit 1; }
# stats: median and p99 (nearest rank) of the numbers on stdin.
stats() { sort -g | awk '{ v[NR] = $1 } END { p = int((99 * NR + 99) / 100); printf "%.1f %.1f %d\n", v[int(NR / 2) + 1], v[p], NR }'; }
declare -A median p99
kinds=(plain preload)
has_tos=false
compgen -G "$dir/client-tos[0-9]*.log" > /dev/null && has_tos=true && kinds+=(tos)
for kind in "${kinds[@]}"; do
    logs=()
    for log in "$dir"/client-"$kind"[0-9]*.log; do
        round=${log##*/client-"$kind"}
        round=${round%.log}
        st=$(cat "$dir/client-$kind$round.status" 2>/dev/null || echo missing)
        [ "$st" = 0 ] || { echo "FAIL: $kind round $round exit status $st"; tail -5 "$log" || true; exit 1; }
        logs+=("$log")
    done
    [ "${#logs[@]}" -gt 0 ] || { echo "FAIL: no $kind rounds in $dir"; exit 1; }
    line="$kind:"
    for step in route_qp connect setup; do
        # connection N: route_qp_us R connect_us C
        read -r m p n < <(awk -v s="$step" '$1 == "connection" {
            v = s == "route_qp" ? $4 : s == "connect" ? $6 : $4 + $6; print v }' "${logs[@]}" | stats)
        median[$kind.$step]=$m
        p99[$kind.$step]=$p
        line+=" $step median $m us p99 $p us;"
    done
    echo "$line ($n connections in ${#logs[@]} rounds)"
done
# Each round's own medians, side by side: how far rounds move tells how much a whole-run
# difference can be trusted.
rounds=""
slower=0
total=0
round_pcts=""
for log in "$dir"/client-plain[0-9]*.log; do
    round=${log##*/client-plain}
    round=${round%.log}
    a=$(awk '$1 == "setup:" { print $3 }' "$log")
    b=$(awk '$1 == "setup:" { print $3 }' "$dir/client-preload$round.log" 2>/dev/null)
    c=""
    "$has_tos" && c=$(awk '$1 == "setup:" { print $3 }' "$dir/client-tos$round.log" 2>/dev/null)
    if [ -z "$a" ] || [ -z "$b" ]; then continue; fi
    rounds+=" $round:${a%.*}/${b%.*}${c:+/${c%.*}}"
    total=$((total + 1))
    [ "$(echo "$b > $a" | bc -l)" = 1 ] && slower=$((slower + 1))
    round_pcts+=" $(echo "($b - $a) * 100 / $a" | bc -l)"
done
[ "$total" -gt 0 ] || { echo "FAIL: no round has both plain and preload medians"; exit 1; }
tos_label=""
"$has_tos" && tos_label=/tos
echo "per-round median setup us (plain/preload$tos_label):$rounds"
echo "rounds where the preload's median was higher than plain's: $slower of $total"
pct() { echo "($1 - $2) * 100 / $2" | bc -l; }
m=$(pct "${median[preload.setup]}" "${median[plain.setup]}")
p=$(pct "${p99[preload.setup]}" "${p99[plain.setup]}")
if "$has_tos"; then
    for step in route_qp connect setup; do
        printf 'tos vs plain: median %s %+.1f%%; preload vs tos: median %s %+.1f%%\n' \
            "$step" "$(pct "${median[tos.$step]}" "${median[plain.$step]}")" \
            "$step" "$(pct "${median[preload.$step]}" "${median[tos.$step]}")"
    done
fi
printf 'preload vs plain: median setup %+.1f%%, p99 setup %+.1f%% (all connections pooled)\n' \
    "$m" "$p"
r=$(echo "$round_pcts" | awk '{ for (i = 1; i <= NF; i++) s += $i; print s / NF }')
printf 'preload vs plain, per round:%s%%; mean over %d rounds %+.1f%%\n' \
    "$(echo "$round_pcts" | awk '{ for (i = 1; i <= NF; i++) printf " %+.1f", $i }')" "$total" "$r"
if [ "$(echo "$r > 5" | bc -l)" = 1 ]; then
    echo "FAIL: the preload adds more than 5% to the median connection setup (mean over rounds)"
    exit 1
fi
echo "PASS: setup_time"
