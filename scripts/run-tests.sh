#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The README's test command: installs dependencies, checks formatting, builds the project
# twice and runs the whole suite CI runs.
#   build/release   gcc, Release: every test labelled unit, opensm, vm and slurm
#   build/sanitize  clang, ASan+UBSan: the unit tests, and the fuzz targets for a short run
#                   (only the unit-tests target: what those tests run). It compiles at the lowest
#                   CPU priority while the release tests run, so it takes only the CPU time they
#                   leave (waits on OpenSM, on the VM's boots); its log is build/sanitize.log.
# Benchmarks (bench) and soak tests never run here.
# Environment: JOBS (parallel build/test jobs, default nproc), RDMA_QOS_SKIP_DEPS=1 to skip the
# apt step, RDMA_QOS_FUZZ_SECONDS (per fuzz target, default 10).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc)}

if [ "${RDMA_QOS_SKIP_DEPS:-0}" != 1 ]; then
    "$top/scripts/install-deps.sh"
fi

echo "== format check"
"$top/scripts/check-format.sh"
echo "== licence lines (SPDX)"
"$top/scripts/spdx-headers.sh"

status=0
echo "== build/release (gcc, Release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DRDMA_QOS_DEVELOPER=ON >/dev/null
cmake --build build/release -j "$jobs"

echo "== build/sanitize (clang, ASan+UBSan), at low priority beside the release tests"
CC=clang CXX=clang++ cmake -S . -B build/sanitize -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DRDMA_QOS_DEVELOPER=ON \
    -DRDMA_QOS_BUILD_BENCH=OFF -DRDMA_QOS_FUZZ_SECONDS="${RDMA_QOS_FUZZ_SECONDS:-10}" >/dev/null
nice -n 19 cmake --build build/sanitize -j "$jobs" --target unit-tests >build/sanitize.log 2>&1 &
sanitize_build=$!
trap 'kill "$sanitize_build" 2>/dev/null || true' EXIT

echo "== ctest: unit, opensm, vm, slurm"
ctest --test-dir build/release -L '^(unit|opensm|vm|slurm)$' -j "$jobs" --output-on-failure \
      --timeout 600 || status=1

echo "== build/sanitize: waiting for the build to finish"
if ! wait "$sanitize_build"; then
    tail -80 build/sanitize.log
    echo "run-tests.sh: the sanitizer build failed (build/sanitize.log)" >&2
    exit 1
fi
tail -1 build/sanitize.log
echo "== ctest (sanitizers): unit, fuzz"
ctest --test-dir build/sanitize -L '^(unit|fuzz)$' -j "$jobs" --output-on-failure \
      --timeout 600 || status=1

if [ "$status" -eq 0 ]; then
    echo "run-tests.sh: all tests passed"
else
    echo "run-tests.sh: FAILURES (see the ctest summaries above)" >&2
fi
exit "$status"
