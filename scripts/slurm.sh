#!/usr/bin/env bash
# A real single-node SLURM on this machine, for development and CI:
#   scripts/slurm.sh start    install Debian's slurm-wlm and munge if missing (root), start the daemons
#   scripts/slurm.sh status   what runs, the partitions, the finished jobs' records
#   scripts/slurm.sh stop     stop the daemons this script started
#   scripts/slurm.sh env      print the line that points SLURM's commands at this cluster:
#                             eval "$(scripts/slurm.sh env)"; sbatch ...
# `start` is idempotent: with the cluster up it changes nothing.
#
# Everything but the packages and munge's key (Debian's, /etc/munge) lives in $SWEETFLOW_SLURM_DIR
# (default /tmp/sweetflow-slurm): slurm.conf, gres.conf, state, logs, and partitions.yaml, the site
# file of workflow/profiles/slurm for this cluster. SLURM's commands find the config through
# SLURM_CONF, which `env` prints, with one exception: inside a job, Snakemake's SLURM job step clears
# every SLURM_* variable but the job's identity before its `srun`, which then reads the default
# /etc/slurm/slurm.conf. So `start` links that path to this cluster's config when no other config is
# there, and `stop` removes the link.
#
# The cluster: one node with this machine's cores and memory (`slurmd -C`), in two partitions that
# mirror a real site: `cpu` (the default) and `gpu`. The node's GPUs are stand-ins (device files
# with /dev/null's numbers): SLURM schedules and records them like real ones, but a GPU stage finds
# no CUDA device and runs on CPU here; what the cluster checks is that GPU stages are sent where
# GPUs are and get them.
# There is no accounting database (slurmdbd needs MySQL): each finished job is appended to a
# job-completion file, which `sacct --completion` (`sacct -c`) reads, and which `status` prints.
# squeue keeps finished jobs for MinJobAge (1 h), which is how Snakemake's executor polls.
set -euo pipefail

STATE=${SWEETFLOW_SLURM_DIR:-/tmp/sweetflow-slurm}
CONF=$STATE/etc/slurm.conf
MUNGE_SOCKET=$STATE/munge/munge.socket
DEFAULT_CONF=/etc/slurm/slurm.conf
GPUS=2  # count-only GPUs of the gpu partition

die() { echo "slurm.sh: $*" >&2; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return
    [ "$(id -u)" = 0 ] || die "slurm-wlm and munge are missing and we are not root: sudo apt-get install slurm-wlm munge"
    command -v apt-get >/dev/null || die "slurm-wlm and munge are missing and there is no apt-get to install them"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge
}

start_munge() {
    mkdir -p "$STATE/munge"
    if alive "$STATE/munge/munged.pid"; then return; fi
    [ -r /etc/munge/munge.key ] || die "/etc/munge/munge.key is missing (Debian's munge package creates it)"
    chown munge:munge "$STATE/munge"
    # munged refuses to run as root; the munge user owns the key.
    runuser -u munge -- munged --socket="$MUNGE_SOCKET" --pid-file="$STATE/munge/munged.pid" \
        --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/munged.seed"
}

write_config() {
    # NodeName=<host> CPUs=... RealMemory=...: what slurmd finds on this machine.
    local node host
    node=$(slurmd -C | head -1)
    host=$(hostname -s)
    [[ $node == NodeName=* ]] || die "slurmd -C gave no node line: $node"
    local cpus mem
    cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
    mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
    mkdir -p "$STATE/etc" "$STATE/log" "$STATE/run" "$STATE/spool/ctld" "$STATE/spool/d"
    cat >"$CONF" <<EOF
# Written by scripts/slurm.sh: a single-node cluster on $host.
ClusterName=sweetflow
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
CryptoType=crypto/munge
AuthInfo=socket=$MUNGE_SOCKET
MpiDefault=none
MailProg=/bin/true
# No systemd or writable cgroup tree in a container: processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmdSpoolDir=$STATE/spool/d
StateSaveLocation=$STATE/spool/ctld
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# No database: finished jobs go to a file that sacct --completion reads.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
# Finished jobs stay visible to squeue for an hour (Snakemake's executor polls with it).
MinJobAge=3600
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:$GPUS State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$host MaxTime=INFINITE State=UP
EOF
    # slurmd counts a GPU only with a device file: stand-ins with /dev/null's numbers (1, 3).
    mkdir -p "$STATE/dev"
    local i
    for i in $(seq 0 $((GPUS - 1))); do
        [ -c "$STATE/dev/gpu$i" ] || mknod "$STATE/dev/gpu$i" c 1 3
    done
    echo "NodeName=$host Name=gpu File=$STATE/dev/gpu[0-$((GPUS - 1))]" >"$STATE/etc/gres.conf"
    # The site file for workflow/profiles/slurm (--slurm-partition-config): what each partition offers,
    # so that the executor sends a job that asks for GPUs to `gpu` and every other job to `cpu`.
    cat >"$STATE/partitions.yaml" <<EOF
partitions:
  cpu:
    max_threads: $cpus
    max_mem_mb: $mem
  gpu:
    max_threads: $cpus
    max_mem_mb: $mem
    max_gpu: $GPUS
EOF
}

start() {
    install_packages
    export SLURM_CONF=$CONF
    if [ -e "$DEFAULT_CONF" ] && [ "$(readlink "$DEFAULT_CONF")" != "$CONF" ]; then
        echo "slurm.sh: warning: $DEFAULT_CONF is another config; srun inside Snakemake's jobs will read it" >&2
    else
        mkdir -p "$(dirname "$DEFAULT_CONF")"
        ln -sfn "$CONF" "$DEFAULT_CONF"
    fi
    if alive "$STATE/run/slurmctld.pid" && alive "$STATE/run/slurmd.pid"; then
        echo "slurm.sh: already running ($STATE)"
        return
    fi
    start_munge
    alive "$STATE/run/slurmctld.pid" || alive "$STATE/run/slurmd.pid" || write_config
    alive "$STATE/run/slurmctld.pid" || slurmctld -f "$CONF"
    alive "$STATE/run/slurmd.pid" || slurmd -f "$CONF"
    for _ in $(seq 60); do
        alive "$STATE/run/slurmctld.pid" || die "slurmctld exited; see $STATE/log/slurmctld.log"
        if timeout 5 sinfo -h -o '%t' 2>/dev/null | grep -qx idle; then
            echo "slurm.sh: running; partitions cpu (default) and gpu on $(hostname -s); state in $STATE"
            return
        fi
        sleep 1
    done
    die "the node did not come up idle within a minute; see $STATE/log/slurmctld.log and slurmd.log"
}

stop() {
    export SLURM_CONF=$CONF
    if alive "$STATE/run/slurmctld.pid"; then
        scontrol shutdown  # slurmctld and every slurmd
    elif alive "$STATE/run/slurmd.pid"; then
        kill "$(cat "$STATE/run/slurmd.pid")"
    fi
    if alive "$STATE/munge/munged.pid"; then
        kill "$(cat "$STATE/munge/munged.pid")"
    fi
    if [ "$(readlink "$DEFAULT_CONF")" = "$CONF" ]; then
        rm "$DEFAULT_CONF"
    fi
    for _ in $(seq 30); do
        alive "$STATE/run/slurmctld.pid" || alive "$STATE/run/slurmd.pid" || alive "$STATE/munge/munged.pid" || {
            echo "slurm.sh: stopped"
            return
        }
        sleep 1
    done
    die "daemons still running after 30 s; pid files in $STATE/run and $STATE/munge"
}

status() {
    export SLURM_CONF=$CONF
    local up=0
    for daemon in run/slurmctld run/slurmd munge/munged; do
        if alive "$STATE/$daemon.pid"; then echo "${daemon#*/}: running"; else echo "${daemon#*/}: stopped"; up=1; fi
    done
    if [ $up = 0 ]; then
        sinfo
        echo "finished jobs (sacct --completion):"
        sacct --completion --parsable2 --format=JobID,JobName,Partition,State,ExitCode,AllocTRES
    fi
    return $up
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) die "usage: scripts/slurm.sh start|stop|status|env" ;;
esac
