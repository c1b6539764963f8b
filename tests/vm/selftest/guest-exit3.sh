# Guest of the harness self-test: its exit status must come back out of run-vm.sh.
echo "guest: exiting with 3"
exit 3
