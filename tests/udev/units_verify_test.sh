#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The systemd units pass `systemd-analyze verify` (syntax, directives, executables) with an
# instance name, and name the command they run; the udev rule's RoCE test finds an Ethernet port
# whichever port it is.
set -euo pipefail
dir=$1
bin=$2
lsd=${3:-}
sad=${4:-}
rules=${5:-}
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$dir/rdma-qos-kernel@.service" "$work/rdma-qos-kernel@rxe0.service"
grep -q "^ExecStart=$bin kernel apply --dev %I$" "$work/rdma-qos-kernel@rxe0.service" || fail "ExecStart"
# '-': no configfs tree must not fail the namespace set-up; apply reports the file instead.
grep -qx "ReadWritePaths=-/sys/kernel/config/rdma_cm" "$work/rdma-qos-kernel@rxe0.service" ||
    fail "ReadWritePaths of the configfs tree is not optional"
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$work/rdma-qos-kernel@rxe0.service" 2>&1 || true)
echo "$out"
# Without a running systemd, references to units of the host (rdma-hw.target) may be unknown;
# anything about our own file is a failure.
if grep -E "rdma-qos-kernel@rxe0.service:[0-9]+" <<<"$out"; then fail "unit file problems"; fi
if grep -qiE "unknown (key|section)|invalid|not executable|no such file" <<<"$out"; then fail "verify"; fi

# rdma-qos-lsd: the socket holds the kernel's path-query group, the service runs the daemon
# with only CAP_NET_ADMIN (and CAP_CHOWN for its control socket), after rdma-hw.target.
if [ -n "$lsd" ]; then
    cp "$dir/rdma-qos-lsd.socket" "$dir/rdma-qos-lsd.service" "$work/"
    grep -qx "ListenNetlink=rdma 4" "$work/rdma-qos-lsd.socket" || fail "ListenNetlink"
    grep -qx "ExecStart=$lsd --foreground" "$work/rdma-qos-lsd.service" || fail "lsd ExecStart"
    grep -qx "CapabilityBoundingSet=CAP_NET_ADMIN CAP_CHOWN" "$work/rdma-qos-lsd.service" || fail "capabilities"
    # The control socket's directory is writable under ProtectSystem=strict.
    grep -qx "RuntimeDirectory=rdma-qos" "$work/rdma-qos-lsd.service" || fail "lsd RuntimeDirectory"
    grep -qx "Type=notify" "$work/rdma-qos-lsd.service" || fail "lsd Type=notify"
    grep -qx "RestartPreventExitStatus=78" "$work/rdma-qos-lsd.service" || fail "lsd RestartPreventExitStatus"
    grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$work/rdma-qos-lsd.service" || fail "lsd ExecReload"
    grep -q "^After=.*rdma-hw.target" "$work/rdma-qos-lsd.service" || fail "ordering"
    # As ibacm.socket: the group is held before anything ordered after rdma-hw.target runs.
    grep -qx "Before=rdma-hw.target" "$work/rdma-qos-lsd.socket" || fail "socket ordering"
    # The path socket: every local user may ask, and it starts the same service. The service
    # requires neither socket, so a node that keeps ibacm runs the path socket alone.
    cp "$dir/rdma-qos-paths.socket" "$work/"
    grep -qx "ListenSequentialPacket=/run/rdma-qos/paths.sock" "$work/rdma-qos-paths.socket" ||
        fail "paths ListenSequentialPacket"
    grep -qx "SocketMode=0666" "$work/rdma-qos-paths.socket" || fail "paths SocketMode"
    grep -qx "Service=rdma-qos-lsd.service" "$work/rdma-qos-paths.socket" || fail "paths Service"
    if grep -qE "^(Requires|Wants|BindsTo)=.*rdma-qos-lsd\.socket" "$work/rdma-qos-lsd.service"; then
        fail "rdma-qos-lsd.service pulls in the kernel's socket (ibacm coexistence)"
    fi
    out=$(cd "$work" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
        "$work/rdma-qos-lsd.socket" "$work/rdma-qos-paths.socket" "$work/rdma-qos-lsd.service" 2>&1 || true)
    echo "$out"
    if grep -E "rdma-qos-(lsd|paths)\.(socket|service):[0-9]+" <<<"$out"; then fail "lsd unit file problems"; fi
    if grep -qiE "unknown (key|section)|invalid|not executable|no such file|failed to parse" <<<"$out"; then
        fail "lsd verify"
    fi
fi

# The SA responder's unit, instance <ca>:<port>, runs the daemon in the foreground at that port.
if [ -n "$sad" ]; then
  # Real instances are <ca>:<port> (mlx5_0:1); systemd-analyze 252 cannot verify a file whose
  # name holds a colon ("Couldn't process aliases"), so the check uses a CA-only instance.
  unit="$work/rdma-qos-sad@mlx5_0.service"
  cp "$dir/rdma-qos-sad@.service" "$unit"
  grep -q "^ExecStart=$sad --foreground --ca %I \$RDMA_QOS_SAD_OPTIONS$" "$unit" || fail "sad ExecStart"
  grep -q "^BindsTo=sys-subsystem-rdma-devices-%i-umad.device$" "$unit" || fail "sad BindsTo"
  grep -qx "Type=notify" "$unit" || fail "sad Type=notify"
  grep -qx "RestartPreventExitStatus=2 78" "$unit" || fail "sad RestartPreventExitStatus"
  out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$unit" 2>&1 || true)
  echo "$out"
  if grep -E "rdma-qos-sad@mlx5_0.service:[0-9]+" <<<"$out"; then fail "sad unit file problems"; fi
  if grep -qiE "unknown (key|section)|invalid|not executable|no such file" <<<"$out"; then fail "sad verify"; fi
fi
# The rules' tests (their PROGRAM) on fake device directories: the RoCE rule must find an
# Ethernet port among all ports, not only port 1; the SA responder's rule must fire for an
# InfiniBand port only (a RoCE port has umad devices too). The device path, name and port must
# reach the shell as arguments, never as part of its script.
if [ -n "$rules" ]; then
    # program_of PATTERN: the PROGRAM value of the rule line matching PATTERN, as udev reads
    # it: up to the first unescaped '"', with \" standing for '"'.
    program_of() {
        local line program value=
        # Called as $(program_of ...): failures go to stderr, or the caller would swallow them.
        line=$(grep -F "$1" "$rules") || fail "no rule with $1 in $rules" >&2
        program=${line#*PROGRAM==\"}
        [ "$program" != "$line" ] || fail "no PROGRAM in the rule with $1" >&2
        while [ -n "$program" ]; do
            case $program in
                '\"'*) value+='"'; program=${program:2} ;;
                '"'*) break ;;
                *) value+=${program:0:1}; program=${program:1} ;;
            esac
        done
        printf '%s' "$value"
    }
    # argv PROGRAM NAME VALUE...: the words udev runs, NUL-separated, after substituting each
    # $NAME with its VALUE ($$ is '$') and splitting on spaces, a '...' group being one word; no
    # shell is involved.
    argv() {
        local cmd=${1//'$$'/$'\001'} word='' quoted=0 c i
        shift
        while [ $# -ge 2 ]; do cmd=${cmd//"$1"/$2}; shift 2; done
        cmd=${cmd//$'\001'/'$'}
        for ((i = 0; i < ${#cmd}; i++)); do
            c=${cmd:i:1}
            if [ "$c" = "'" ]; then
                quoted=$((1 - quoted))
            elif [ "$c" = " " ] && [ $quoted = 0 ]; then
                [ -n "$word" ] && printf '%s\0' "$word"
                word=
            else
                word+=$c
            fi
        done
        [ -n "$word" ] && printf '%s\0' "$word"
    }
    # device DIR LAYER...: a fake device directory with one port per LAYER.
    device() {
        local d=$work/$1 n=1 layer
        shift
        for layer in "$@"; do
            mkdir -p "$d/ports/$n" && printf '%s\n' "$layer" > "$d/ports/$n/link_layer"
            n=$((n + 1))
        done
    }
    roce=$(program_of 'SUBSYSTEM=="infiniband", PROGRAM==')
    echo "RoCE rule PROGRAM: $roce"
    # matches DEVPATH-TAIL: the RoCE PROGRAM succeeds for a device whose /sys$devpath is
    # $work/DEVPATH-TAIL (the devpath climbs out of /sys with /..).
    matches() {
        local -a words
        mapfile -d '' words < <(argv "$roce" '$devpath' "/..$work/$1")
        "${words[@]}"
    }
    device roce Ethernet
    device second InfiniBand Ethernet
    device ib InfiniBand InfiniBand
    device none
    matches roce || fail "rule misses a device with one Ethernet port"
    matches second || fail "rule misses a device whose port 2 is Ethernet"
    if matches ib; then fail "rule fires for InfiniBand ports only"; fi
    if matches none; then fail "rule fires for a device without ports"; fi
    # A device path with shell syntax in it is a path, not a command.
    matches 'none/$(touch${IFS}'"$work"'/injected)' || true
    [ ! -e "$work/injected" ] || fail "the device path was run as shell code"

    sad_rule=$(program_of 'SUBSYSTEM=="infiniband_mad"')
    echo "SA responder rule PROGRAM: $sad_rule"
    grep -F 'SUBSYSTEM=="infiniband_mad"' "$rules" | grep -qF 'rdma-qos-sad@$attr{ibdev}:$attr{port}.service' ||
        fail "the umad rule does not want rdma-qos-sad@<ca>:<port>"
    # sad_matches DEVICE PORT: the umad rule's PROGRAM succeeds for the umad device of port
    # PORT of $work/DEVICE ($work stands in for /sys/class/infiniband, which a build host may
    # not have).
    sad_matches() {
        local -a words
        mapfile -d '' words < <(argv "$sad_rule" /sys/class/infiniband "$work" \
            '$attr{ibdev}' "$1" '$attr{port}' "$2")
        "${words[@]}"
    }
    sad_matches ib 1 || fail "umad rule misses an InfiniBand port"
    sad_matches second 1 || fail "umad rule misses port 1 (InfiniBand) of a mixed device"
    if sad_matches second 2; then fail "umad rule fires for port 2 (Ethernet) of a mixed device"; fi
    if sad_matches roce 1; then fail "umad rule fires for a RoCE port"; fi
    if sad_matches none 1; then fail "umad rule fires for a port that does not exist"; fi
    sad_matches 'none/$(touch${IFS}'"$work"'/injected2)' 1 || true
    [ ! -e "$work/injected2" ] || fail "the device name was run as shell code"

    # The unit's own guard (ExecCondition=) for an instance started by hand: the same answer,
    # with systemd's escapes ($$, %%) undone and %I the instance.
    if [ -n "$sad" ]; then
        cond=$(sed -n 's/^ExecCondition=//p' "$dir/rdma-qos-sad@.service")
        [ -n "$cond" ] || fail "rdma-qos-sad@ has no ExecCondition= for the link layer"
        echo "rdma-qos-sad@ ExecCondition: $cond"
        cond=${cond//'$$'/'$'}
        cond=${cond//'%%'/'%'}
        unit_runs() {
            local -a words
            mapfile -d '' words < <(argv "$cond" /sys/class/infiniband "$work" '%I' "$1")
            "${words[@]}"
        }
        unit_runs ib:2 || fail "ExecCondition refuses an InfiniBand port"
        if unit_runs second:2; then fail "ExecCondition lets the unit run on a RoCE port"; fi
        if unit_runs roce:1; then fail "ExecCondition lets the unit run on a RoCE device"; fi
    fi
fi
echo PASS
