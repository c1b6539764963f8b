#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The README's demo command: installs dependencies, builds, and runs the demo: a simulated
# InfiniBand fat tree configured by a real subnet manager (OpenSM), then rdma-qos-sad at the
# SM's port enforcing the sample QoS policy (Documentation/examples/qos-policy.conf): one path
# query per sample service, each answer shown next to OpenSM's for the same query.
# Extra arguments go to the demo (e.g. --json, --policy FILE).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
if [ "${RDMA_QOS_SKIP_DEPS:-0}" != 1 ]; then
    "$top/scripts/install-deps.sh"
fi
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DRDMA_QOS_DEVELOPER=ON >/dev/null
cmake --build build/release -j "${JOBS:-$(nproc)}" --target rdma-qos-demo >/dev/null
exec build/release/tests/testbed/demo/rdma-qos-demo "$@"
