#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Fuzzing at depth (label soak, never in CI): runs every libFuzzer target of the sanitizer build
# for a number of executions instead of CI's short timed runs, from the same seed corpora the
# fuzz tests use, and prints one table row per target: executions, coverage (edges and
# features), corpus size, crashes and time. The target list comes from ctest (label fuzz), so a
# new rdma_qos_add_fuzzer() target is picked up without editing this script.
#
#   scripts/fuzz-depth.sh [--runs N] [--max-time SEC] [--build DIR] [--only REGEX] [--markdown]
#
# --runs N     executions per target (default 10000000)
# --max-time S stop a target after S seconds even short of N executions (default: no cap); the
#              row then says "stopped at E executions after S s", never that it reached N
# --build DIR  the sanitizer build (default build/sanitize; configured and built if missing)
# --only RE    run only the targets whose ctest name matches RE
# --markdown   print the table as Markdown (for Documentation/testing.md)
# Targets run one after another; one that crashes is reported and the rest still run. On SIGINT or
# SIGTERM the running target is interrupted (libFuzzer prints its totals), its row is printed as
# stopped, and the script exits without starting the rest.
# Exit status: 0 no crash, 1 a target crashed or failed (its log is kept), 2 usage.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=10000000
max_time=0
build="$top/build/sanitize"
only='.'
markdown=0
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --max-time) max_time=${2:?--max-time needs seconds}; shift 2 ;;
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --only) only=${2:?--only needs a regular expression}; shift 2 ;;
    --markdown) markdown=1; shift ;;
    -h | --help) sed -n '3,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz-depth.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$runs" in '' | *[!0-9]*) echo "fuzz-depth.sh: --runs wants a number, not '$runs'" >&2; exit 2 ;; esac
case "$max_time" in '' | *[!0-9]*) echo "fuzz-depth.sh: --max-time wants seconds, not '$max_time'" >&2; exit 2 ;; esac

if [ ! -f "$build/CTestTestfile.cmake" ]; then
    CC=clang CXX=clang++ cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
        -DRDMA_QOS_DEVELOPER=ON -DRDMA_QOS_BUILD_BENCH=OFF >/dev/null
fi
# Each fuzz test's command line, as ctest would run it: the binary and its corpus directories.
mapfile -t tests < <(ctest --test-dir "$build" -L '^fuzz$' -N --show-only=json-v1 |
    python3 -c '
import json, sys, re
for t in json.load(sys.stdin)["tests"]:
    cmd = t["command"]
    binary = next(a for a in cmd if a.endswith(("_fuzz", "_fuzzer")) and "/" in a)
    corpora = [a for a in cmd[cmd.index(binary) + 1:] if not a.startswith("-")]
    print("\t".join([t["name"], binary] + corpora))
')

# Build only the fuzz targets chosen (their binaries are named after their CMake targets).
targets=()
for line in "${tests[@]}"; do
    IFS=$'\t' read -r -a f <<<"$line"
    [[ "${f[0]}" =~ $only ]] && targets+=("$(basename "${f[1]}")")
done
[ "${#targets[@]}" = 0 ] || cmake --build "$build" --target "${targets[@]}" >/dev/null

logs="$build/fuzz-depth"
mkdir -p "$logs"
status=0
if [ "$markdown" = 1 ]; then
    echo "| target | executions | edges | features | corpus | crashes | seconds |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
else
    printf '%-48s %12s %7s %9s %7s %7s %8s\n' target executions edges features corpus crashes seconds
fi
# SIGINT/SIGTERM: interrupt the running fuzzer (it prints its totals and exits 72), report it.
fuzzer=0 interrupted=0
trap 'interrupted=1; [ "$fuzzer" = 0 ] || kill -INT "$fuzzer" 2>/dev/null || true' INT TERM
for line in "${tests[@]}"; do
    [ "$interrupted" = 0 ] || break
    IFS=$'\t' read -r -a f <<<"$line"
    name=${f[0]} binary=${f[1]}
    [[ "$name" =~ $only ]] || continue
    work="$logs/$name.corpus"
    # The ctest run's scratch corpus is among the directories: it exists only once ctest ran.
    mkdir -p "$work" "${f[@]:2}"
    log="$logs/$name.log"
    start=$(date +%s)
    crashes=0
    # -runs counts executions; -print_final_stats gives the totals parsed below. Crash inputs
    # land beside the log (artifact_prefix) so that a crash can be replayed.
    ASAN_OPTIONS=detect_leaks=1 "$binary" -runs="$runs" -max_total_time="$max_time" \
        -print_final_stats=1 -artifact_prefix="$logs/$name-" "$work" "${f[@]:2}" >"$log" 2>&1 &
    fuzzer=$!
    rc=0
    # wait returns early when a trapped signal arrives: wait again for the fuzzer's own status.
    while :; do
        wait "$fuzzer" && rc=0 || rc=$?
        kill -0 "$fuzzer" 2>/dev/null || break
    done
    fuzzer=0
    stopped=
    if [ "$interrupted" = 1 ] && [ "$rc" = 72 ]; then
        stopped=interrupted
    elif [ "$rc" != 0 ]; then
        crashes=1
        status=1
    fi
    seconds=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    edges=$(grep -a -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    features=$(grep -a -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    corpus=$(grep -a -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
    shown=${execs:-?}
    if [ "$crashes" = 0 ] && [ -n "$execs" ] && [ "$execs" -lt "$runs" ]; then
        shown="stopped at $execs executions after $seconds s"
        [ -z "$stopped" ] || shown="$shown ($stopped)"
    fi
    if [ "$markdown" = 1 ]; then
        echo "| $name | $shown | ${edges:-?} | ${features:-?} | ${corpus:-?} | $crashes | $seconds |"
    else
        printf '%-48s %12s %7s %9s %7s %7s %8s\n' "$name" "$shown" "${edges:-?}" \
            "${features:-?}" "${corpus:-?}" "$crashes" "$seconds"
    fi
    [ "$crashes" = 0 ] || echo "fuzz-depth.sh: $name failed (exit $rc): see $log" >&2
done
exit "$status"
