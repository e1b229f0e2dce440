#!/usr/bin/env bash
# A one-node SLURM on this machine, for testing the pipeline's SLURM profile
# (tests/test_slurm.py). Debian's slurm-wlm (22.05) + munge, daemons run as root.
#
#   scripts/local_slurm.sh [start] [VENV]   install if missing, configure, start, wait for idle
#   scripts/local_slurm.sh status           daemons, sinfo and squeue
#   scripts/local_slurm.sh stop             stop the daemons this script started (by pid file)
#
# start also installs snakemake-executor-plugin-slurm into VENV (default: the repo's .venv)
# when it is missing there. Idempotent: running daemons are left alone, a second start only
# waits for the node. State, spool, logs and pid files go under $GRADCOMP_SLURM_DIR
# (default /tmp/gradcomp-slurm); the configuration is written to /etc/slurm/slurm.conf
# (a slurm.conf not written by this script is never overwritten).
#
# No accounting storage: `sacct` answers "accounting storage is disabled", so the profile
# has to query job states with squeue (slurm-status-command: squeue). MinJobAge=300 keeps
# finished jobs visible to squeue for 5 minutes.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="${GRADCOMP_SLURM_DIR:-/tmp/gradcomp-slurm}"
CONF=/etc/slurm/slurm.conf
MARK="# written by gradcomp scripts/local_slurm.sh"
NODE="$(hostname -s)"

log() { echo "local_slurm: $*" >&2; }
die() { log "$*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
    die "must run as root (it installs packages and starts munged, slurmctld, slurmd)"
fi

alive() {  # alive PIDFILE: the pid in PIDFILE names a running process
    local pid
    [ -s "$1" ] || return 1
    pid="$(cat "$1")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

stop_pidfile() {  # stop_pidfile NAME PIDFILE
    local pid i
    if ! alive "$2"; then
        log "$1 not running"
        return 0
    fi
    pid="$(cat "$2")"
    log "stopping $1 (pid $pid)"
    kill -TERM "$pid"
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    log "$1 (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        && command -v munged >/dev/null && command -v sinfo >/dev/null; then
        return 0
    fi
    log "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q slurm-wlm munge
}

install_plugin() {
    local venv="$1"
    if [ ! -x "$venv/bin/python" ]; then
        log "no Python at $venv/bin/python: not installing the executor plugin"
        return 0
    fi
    if "$venv/bin/python" -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
        return 0
    fi
    log "installing snakemake-executor-plugin-slurm into $venv"
    "$venv/bin/python" -m pip install -q "snakemake-executor-plugin-slurm>=2.8"
}

start_munge() {
    local pidfile=/run/munge/munged.pid
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if alive "$pidfile"; then
        log "munged already running (pid $(cat "$pidfile"))"
    else
        if [ ! -s /etc/munge/munge.key ]; then
            log "creating /etc/munge/munge.key"
            if command -v mungekey >/dev/null; then
                mungekey --create --force
            else
                dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
            fi
            chown munge:munge /etc/munge/munge.key
            chmod 400 /etc/munge/munge.key
        fi
        log "starting munged"
        su -s /bin/sh munge -c /usr/sbin/munged
        touch "$ROOT/started-munged"   # stop only a munged this script started
    fi
    munge -n | unmunge >/dev/null || die "munge does not work (munge -n | unmunge)"
}

write_conf() {
    local cpus mem_kb real_mb tmp
    cpus="$(nproc)"
    mem_kb="$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
    real_mb=$(( mem_kb / 1024 * 3 / 4 ))   # below the machine's, or slurmd drains the node
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script; move it away first"
    fi
    mkdir -p /etc/slurm
    tmp="$(mktemp)"
    cat >"$tmp" <<EOF
$MARK
ClusterName=gradcomp
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$ROOT/state
SlurmdSpoolDir=$ROOT/spool
SlurmctldPidFile=$ROOT/slurmctld.pid
SlurmdPidFile=$ROOT/slurmd.pid
SlurmctldLogFile=$ROOT/log/slurmctld.log
SlurmdLogFile=$ROOT/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
NodeName=$NODE CPUs=$cpus RealMemory=$real_mb State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    if ! cmp -s "$tmp" "$CONF"; then
        log "writing $CONF (CPUs=$cpus RealMemory=$real_mb)"
        cp "$tmp" "$CONF"
        chmod 644 "$CONF"
    fi
    rm -f "$tmp"
}

node_state() {
    sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null | head -n1
}

start() {
    local venv="${1:-$REPO/.venv}" i state
    install_packages
    install_plugin "$venv"
    mkdir -p "$ROOT/state" "$ROOT/spool" "$ROOT/log"
    start_munge
    write_conf
    if alive "$ROOT/slurmctld.pid"; then
        log "slurmctld already running (pid $(cat "$ROOT/slurmctld.pid"))"
    else
        log "starting slurmctld"
        # -c: clear state left by an earlier, stopped controller (its jobs are gone)
        slurmctld -c
    fi
    if alive "$ROOT/slurmd.pid"; then
        log "slurmd already running (pid $(cat "$ROOT/slurmd.pid"))"
    else
        log "starting slurmd"
        slurmd
    fi
    for i in $(seq 1 120); do
        state="$(node_state || true)"
        case "$state" in
            idle | mix | alloc) log "node $NODE is $state"; sinfo; return 0 ;;
            drain* | down*) scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
        esac
        sleep 0.5
    done
    die "node $NODE not idle after 60 s (state: ${state:-none}); see $ROOT/log/"
}

stop() {
    stop_pidfile slurmd "$ROOT/slurmd.pid"
    stop_pidfile slurmctld "$ROOT/slurmctld.pid"
    if [ -e "$ROOT/started-munged" ]; then
        stop_pidfile munged /run/munge/munged.pid
        rm -f "$ROOT/started-munged"
    elif alive /run/munge/munged.pid; then
        log "munged not started by this script: left running"
    fi
}

status() {
    local d
    for d in slurmctld slurmd; do
        if alive "$ROOT/$d.pid"; then echo "$d: running (pid $(cat "$ROOT/$d.pid"))"; else echo "$d: stopped"; fi
    done
    if alive /run/munge/munged.pid; then echo "munged: running"; else echo "munged: stopped"; fi
    if alive "$ROOT/slurmctld.pid"; then sinfo; squeue; fi
}

cmd="${1:-start}"
case "$cmd" in
    start) shift || true; start "$@" ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: $0 [start [VENV] | stop | status]" ;;
esac
