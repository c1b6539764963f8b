# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Guest of the harness self-test: its exit status must come back out of run-vm.sh.
echo "guest: exiting with 3"
exit 3
