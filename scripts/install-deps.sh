#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Installs every Debian package rdma-qos needs to build, test and run its demo.
# Idempotent and non-interactive: packages already present are skipped, and apt's lists are
# refreshed only when something is missing. The package lists live in scripts/deps/*.list,
# one file per purpose, so each component adds what it needs without touching this script.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: run as root (apt-get install needs it)" >&2
    exit 1
fi

mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$here"/deps/*.list | grep -v '^$' | sort -u)

missing=()
for pkg in "${wanted[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps.sh: all ${#wanted[@]} packages present"
    exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
