# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The Slurm test bed: a one-node cluster on this machine, started from Debian's munged,
# slurmctld and slurmd with a private key, socket, ports and state under one directory, so it
# neither needs nor touches /etc/slurm or a system munged. Sourced by the slurm-labelled tests:
#   slurm_cluster_start DIR PLUGSTACK_FILE   (exports SLURM_CONF; partitions debug (default), io)
#   slurm_cluster_stop                       (also on EXIT, via the caller's trap)
# Needs root (slurmd launches tasks as their users).

slurm_cluster_free_port() {
    local port
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 30000))
        if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q . &&
            ! ss -Hltn "sport = :$((port + 1))" 2>/dev/null | grep -q .; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

slurm_cluster_start() {
    local dir=$1 plugstack=$2 host port
    SLURM_CLUSTER_DIR=$dir
    host=$(hostname -s)
    port=$(slurm_cluster_free_port) || { echo "no free port pair for slurmctld/slurmd" >&2; return 1; }
    mkdir -p "$dir"/{munge,state,spool,log}
    chmod 700 "$dir/munge"
    mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 600 "$dir/munge/munge.key"
    munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock" \
        --pid-file="$dir/munge/pid" --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" \
        --force || { echo "munged did not start" >&2; return 1; }
    cat > "$dir/slurm.conf" <<CONF
ClusterName=rdmaqostest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
PlugStackConfig=$plugstack
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=io Nodes=$host MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -i || { echo "slurmctld did not start" >&2; return 1; }
    slurmd || { echo "slurmd did not start" >&2; return 1; }
    for _ in $(seq 60); do
        if sinfo -h -o '%t' 2>/dev/null | grep -qx idle; then return 0; fi
        sleep 0.5
    done
    echo "the node never became idle; slurmctld's log:" >&2
    tail -20 "$dir/log/slurmctld.log" >&2
    return 1
}

slurm_cluster_stop() {
    local dir=${SLURM_CLUSTER_DIR:-} f pids=()
    [ -n "$dir" ] || return 0
    for f in slurmd.pid slurmctld.pid munge/pid; do
        [ -f "$dir/$f" ] && pids+=("$(cat "$dir/$f")")
    done
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 40); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.25
    done
    [ ${#pids[@]} -eq 0 ] || kill -9 "${pids[@]}" 2>/dev/null || true
    SLURM_CLUSTER_DIR=
    return 0
}
