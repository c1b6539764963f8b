#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The SPANK plugin in a real one-node Slurm (Debian's slurmctld, slurmd, munged): --rdma-qos on
# srun and sbatch, the site's rules at submission, partition defaults, the user's own values,
# and jobs that run with stock behaviour when rdma-qos's side is broken. RoCE decisions
# (link=roce): no RDMA device is needed. Expected values are written out: the policy gives
# class 3 level hpc (SL 3) and class 4 level storage (SL 5); roce_sl2tclass maps SL 3 -> 104,
# SL 5 -> 184.
set -euo pipefail
module=$1
rdma_qos=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=slurm_cluster.sh
. "$here/slurm_cluster.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the Slurm test bed needs root (slurmd)"
    exit 77
fi
for p in munged slurmctld slurmd srun sbatch; do
    command -v "$p" >/dev/null || { echo "FAIL: $p not installed (scripts/deps/slurm.list)"; exit 1; }
done

tmp=$(mktemp -d /tmp/rdma-qos-slurm.XXXXXX)
chmod 755 "$tmp"
cleanup() { slurm_cluster_stop; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "--- slurmd log (last lines)"
    tail -15 "$tmp/cluster/log/slurmd.log" 2>/dev/null || true
    exit 1
}
ok() { echo "ok: $*"; }

cat > "$tmp/qos-policy.conf" <<'POLICY'
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: hpc
        sl: 3
    end-qos-level
    qos-level
        name: storage
        sl: 5
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        qos-class: 3
        qos-level-name: hpc
    end-qos-match-rule
    qos-match-rule
        qos-class: 4
        qos-level-name: storage
    end-qos-match-rule
end-qos-match-rules
POLICY
printf 'policy_file %s\nroce_sl2tclass 0,32,0,104,0,184\n' "$tmp/qos-policy.conf" > "$tmp/rdma-qos.conf"
base="config=$tmp/rdma-qos.conf rdma-qos=$rdma_qos link=roce"
plugstack() { echo "required $module $base $*" > "$tmp/plugstack.conf"; }
plugstack "partition=io:storage allow=storage:group=storage allow=hpc:user=root"
slurm_cluster_start "$tmp/cluster" "$tmp/plugstack.conf" || fail "the cluster did not start"
unset RDMA_QOS_CLASS UCX_IB_SL UCX_IB_TRAFFIC_CLASS NCCL_IB_SL NCCL_IB_TC LD_PRELOAD
stacks() { printenv RDMA_QOS_CLASS UCX_IB_SL UCX_IB_TRAFFIC_CLASS NCCL_IB_SL NCCL_IB_TC | tr '\n' ' '; }
export -f stacks

# --- srun: a level name, the policy's values for every stack.
out=$(srun --rdma-qos=hpc bash -c stacks) || fail "srun --rdma-qos=hpc failed"
[ "$out" = "3 3 104 3 104 " ] || fail "srun --rdma-qos=hpc: '$out'"
grep -q "rdma-qos: job [0-9]* step 0 user root: class 3 (hpc) from --rdma-qos; set RDMA_QOS_CLASS=3 UCX_IB_SL=3 UCX_IB_TRAFFIC_CLASS=104 NCCL_IB_SL=3 NCCL_IB_TC=104" \
    "$tmp/cluster/log/slurmd.log" || fail "slurmd's log does not record the class"
ok "srun --rdma-qos=hpc: the policy's values, recorded in slurmd's log"

# --- srun --help lists the option.
srun --help | grep -q -- '--rdma-qos=CLASS' || fail "srun --help does not list --rdma-qos"
ok "srun --help lists --rdma-qos"

# --- A reserved class is refused at submission, by srun and by sbatch, naming the rule.
rule_line="rdma-qos: class 4 (storage) is reserved by plugstack.conf argument 5 'allow=storage:group=storage'; user root (groups root; account not given) is not named there"
if err=$(srun --rdma-qos=storage true 2>&1); then fail "srun --rdma-qos=storage was accepted"; fi
grep -qxF "srun: error: $rule_line" <<<"$err" || fail "srun's refusal: $err"
printf '#!/bin/sh\ntrue\n' > "$tmp/true.sh"
before=$(squeue -h | wc -l)
if err=$(sbatch --rdma-qos=storage "$tmp/true.sh" 2>&1); then fail "sbatch --rdma-qos=storage was accepted: $err"; fi
grep -qxF "sbatch: error: $rule_line" <<<"$err" || fail "sbatch's refusal: $err"
[ "$(squeue -h | wc -l)" = "$before" ] || fail "a refused job was queued"
if err=$(salloc --rdma-qos=storage true 2>&1); then fail "salloc --rdma-qos=storage was accepted: $err"; fi
grep -qxF "salloc: error: $rule_line" <<<"$err" || fail "salloc's refusal: $err"
ok "a reserved class is refused by srun, sbatch and salloc with the rule's line"

# --- salloc: the allocation's sruns get the class.
out=$(salloc --rdma-qos=hpc srun bash -c stacks 2>/dev/null) || fail "salloc --rdma-qos=hpc"
[ "$out" = "3 3 104 3 104 " ] || fail "salloc --rdma-qos=hpc: '$out'"
ok "salloc --rdma-qos=hpc: its sruns get the class"

# --- An unknown name is refused; a bad value is refused by the option itself.
if err=$(srun --rdma-qos=gold true 2>&1); then fail "srun --rdma-qos=gold was accepted"; fi
grep -q "rdma-qos: --rdma-qos=gold: no such class" <<<"$err" || fail "unknown class: $err"
if err=$(srun --rdma-qos='a b' true 2>&1); then fail "srun --rdma-qos='a b' was accepted"; fi
grep -q "a class is a number 0..4095 or a level name" <<<"$err" || fail "bad value: $err"
ok "unknown and malformed classes are refused"

# --- A partition's default applies without the option (a site default is not checked against
# allow rules); other partitions get nothing.
out=$(srun -p io bash -c stacks) || fail "srun -p io failed"
[ "$out" = "4 5 184 5 184 " ] || fail "partition io's default: '$out'"
out=$(srun bash -c 'printenv RDMA_QOS_CLASS UCX_IB_SL || true')
[ -z "$out" ] || fail "partition debug has no default, yet: '$out'"
ok "partition io's default class applies without --rdma-qos"

# --- The user's own UCX_IB_SL survives; the rest follows the policy.
out=$(UCX_IB_SL=7 srun --rdma-qos=3 bash -c stacks)
[ "$out" = "3 7 104 3 104 " ] || fail "user's UCX_IB_SL: '$out'"
grep -q "kept the user's UCX_IB_SL=7 (policy: 3)" "$tmp/cluster/log/slurmd.log" ||
    fail "slurmd's log does not say the user's value was kept"
ok "a user's own UCX_IB_SL survives"

# --- sbatch: the batch script and its sruns get the class; an srun in it may ask for another.
cat > "$tmp/batch.sh" <<'BATCH'
#!/bin/bash
echo "batch $(stacks)"
echo "step $(srun bash -c stacks)"
echo "other $(srun --rdma-qos=0 bash -c stacks)"
BATCH
chmod +x "$tmp/batch.sh"
job=$(sbatch --parsable --rdma-qos=hpc -o "$tmp/batch.out" "$tmp/batch.sh") || fail "sbatch --rdma-qos=hpc"
for _ in $(seq 60); do
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
    sleep 0.5
done
expected="batch 3 3 104 3 104 
step 3 3 104 3 104 
other 0 0 0 0 0 "
[ "$(cat "$tmp/batch.out")" = "$expected" ] || fail "sbatch job output:
$(cat "$tmp/batch.out")"
ok "sbatch --rdma-qos=hpc: the batch script and its sruns; srun --rdma-qos=0 inside replaces the values"

# --- rdma-qos jobs: which class a running job's processes use.
srun --rdma-qos=hpc sleep 30 &
srun_pid=$!
for _ in $(seq 40); do
    running=$(squeue -h -o %i -t R | head -n 1)
    [ -n "$running" ] && "$rdma_qos" jobs --job "$running" --json 2>/dev/null | grep -q '"sleep"' && break
    sleep 0.25
done
json=$("$rdma_qos" jobs --job "$running" --json)
grep -q '"class":"3","command":"sleep","job":"'"$running"'"' <<<"$json" || fail "rdma-qos jobs: $json"
grep -q '"set_by":"slurm"' <<<"$json" || fail "rdma-qos jobs set_by: $json"
scancel "$running"
wait "$srun_pid" 2>/dev/null || true  # srun reports the cancelled step on stderr
ok "rdma-qos jobs shows the class of a running job's processes"

# --- An account= rule: the account is known for sure only when the step starts, so the check
# there admits -A io and refuses another account.
plugstack "allow=storage:account=io"
out=$(srun -A io --rdma-qos=storage printenv RDMA_QOS_CLASS) || fail "srun -A io --rdma-qos=storage"
[ "$out" = 4 ] || fail "account io: '$out'"
if err=$(srun -A physics --rdma-qos=storage printenv RDMA_QOS_CLASS 2>&1); then
    fail "account physics was given class storage: $err"
fi
grep -qxF "rdma-qos: class 4 (storage) is reserved by plugstack.conf argument 4 'allow=storage:account=io'; user root (groups root; account physics) is not named there" <<<"$err" ||
    fail "account physics: the job's stderr: $err"
grep -q "class 4 (storage) is reserved by plugstack.conf argument 4 'allow=storage:account=io'; user root (groups root; account physics)" \
    "$tmp/cluster/log/slurmd.log" || fail "account physics: slurmd's log does not name the rule"
ok "account= rules admit the job's account and refuse others when the step starts"

# --- The preload module where the site enables it, in front of the job's own LD_PRELOAD.
plugstack "preload=/opt/site/librdmaqos-preload.so"
# (ld.so warns on stderr that the path does not exist: only the variable matters here)
out=$(LD_PRELOAD= srun --rdma-qos=3 printenv LD_PRELOAD 2>/dev/null)
[ "$out" = "/opt/site/librdmaqos-preload.so" ] || fail "preload=: '$out'"
ok "preload= puts the module into the tasks' LD_PRELOAD"

# --- A broken policy file never breaks a job: it runs, with one line on stderr saying why.
plugstack ""
cp "$tmp/qos-policy.conf" "$tmp/good-policy.conf"
echo "qos-levels {" > "$tmp/qos-policy.conf"
out=$(srun --rdma-qos=3 bash -c 'stacks; echo ran' 2>"$tmp/err") || fail "a broken policy failed the job"
[ "$out" = " ran" ] || [ "$out" = "ran" ] || fail "a broken policy: the job got '$out'"
[ "$(grep -c 'rdma-qos:' "$tmp/err")" = 1 ] || fail "a broken policy: stderr was: $(cat "$tmp/err")"
grep -q "this job runs with the stacks' own defaults" "$tmp/err" || fail "stderr: $(cat "$tmp/err")"
out=$(srun --rdma-qos=hpc bash -c 'echo ran' 2>"$tmp/err") || fail "a name under a broken policy failed the job"
[ "$out" = "ran" ] || fail "a name under a broken policy: '$out'"
grep -q "cannot be resolved" "$tmp/err" || fail "stderr: $(cat "$tmp/err")"
cp "$tmp/good-policy.conf" "$tmp/qos-policy.conf"
ok "a broken policy file leaves jobs running and says why once"

# --- Broken plugstack.conf arguments: --rdma-qos is accepted and ignored, the job runs.
echo "required $module $base colour=blue" > "$tmp/plugstack.conf"
out=$(srun --rdma-qos=3 bash -c 'echo ran; printenv UCX_IB_SL || true' 2>"$tmp/err") || fail "bad arguments failed the job"
[ "$out" = "ran" ] || fail "bad arguments: '$out'"
grep -q "plugstack.conf argument 4 'colour=blue': unknown key 'colour'" "$tmp/err" ||
    fail "bad arguments: srun's stderr: $(cat "$tmp/err")"
ok "broken plugstack.conf arguments leave jobs running and name the argument"

# --- rdma-qos itself missing: the job runs.
echo "required $module config=$tmp/rdma-qos.conf rdma-qos=/nonexistent/rdma-qos link=roce" > "$tmp/plugstack.conf"
out=$(srun --rdma-qos=3 bash -c 'echo ran' 2>"$tmp/err") || fail "a missing rdma-qos failed the job"
[ "$out" = "ran" ] || fail "missing rdma-qos: '$out'"
grep -q "cannot run /nonexistent/rdma-qos" "$tmp/err" || fail "stderr: $(cat "$tmp/err")"
ok "a missing rdma-qos program leaves jobs running"

echo "PASS"
