# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Guest of the harness self-test: never finishes, so only the runner's timeout ends the VM.
echo "guest: hanging on purpose"
exec sleep 100000
