#!/usr/bin/env bash
# A throwaway one-node SLURM cluster on this machine, for the cluster tests.
#
#   tests/cluster/slurm.sh start STATE_DIR   install the packages if needed, start munged, slurmctld and
#                                            slurmd with everything under STATE_DIR, run one job
#   tests/cluster/slurm.sh stop STATE_DIR    cancel the cluster's jobs, stop the daemons started there
#
# After `start`, `source STATE_DIR/env` points sbatch, squeue, sinfo, scancel, scontrol and srun at the
# cluster. Nothing in /etc/slurm or /etc/munge is read or written: every daemon gets its config, key,
# socket, spool, state, log and pid file from STATE_DIR, so the script works beside another SLURM
# installation, and `stop` signals only the processes whose pids it recorded (never by name).
#
# Made for a Debian 12 container run as root (Debian's slurm 22.05 and munge 0.5 packages): no systemd, no
# cgroups, so processes are tracked through /proc (proctrack/linuxproc) and not confined (task/none);
# memory requests are honoured by the scheduler but not enforced.
#
# On failure: exit status 1 and one line on stderr naming the failed step, after stopping whatever this
# call had started. Progress of the package install goes to STATE_DIR/install.log.
set -Eeuo pipefail

# The daemons live in /usr/sbin, which a non-root PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"

readonly PACKAGES=(slurmctld slurmd slurm-client munge)
readonly COMMANDS=(slurmctld slurmd munged mungekey munge unmunge sbatch srun squeue sinfo scancel scontrol)
readonly UP_DEADLINE_S=60      # each daemon, and the first job, must be up/done within this
readonly STOP_DEADLINE_S=15    # SIGTERM, then SIGKILL after this
readonly CLUSTER_NAME=gpt1test

ACTION=""
STATE=""
STEP="arguments"
CREATED_POLICY_RC_D=""
SURVIVORS=()
LAUNCHING=""    # set once this call starts daemons: only then does a failure stop them

usage() {
    echo "usage: $0 start|stop STATE_DIR (an absolute path)" >&2
    exit 2
}

# One line on stderr, stop what this call started, exit 1.
fail() {
    trap - ERR
    local why=${2//$'\n'/ | }
    echo "slurm.sh: $ACTION failed at step '$1': $why" >&2
    if [[ -n $LAUNCHING ]]; then
        stop_daemons || true
        unlink_node_config || true
    fi
    exit 1
}
trap 'fail "$STEP" "command failed (line $LINENO): $BASH_COMMAND"' ERR
trap 'fail "$STEP" "interrupted"' INT TERM

# Removes a policy-rc.d this script created to keep the package install from starting services.
cleanup() {
    if [[ -n $CREATED_POLICY_RC_D ]]; then
        rm -f "$CREATED_POLICY_RC_D"
    fi
}
trap cleanup EXIT

# The last lines of a log file on one line, for the error message.
log_tail() {
    local f
    for f in "$@"; do
        if [[ -s $f ]]; then
            echo "$(basename "$f"): $(tail -n 3 "$f" | tr '\n' ' ' | tr -s ' ')"
        fi
    done | tr '\n' ' ' | sed 's/ *$//'
}

# ---------------------------------------------------------------- pids: record, check, signal

pid_file() { echo "$STATE/run/$1.pid"; }

# Whether process $1 is alive and ours: its command line names STATE_DIR, so a pid reused by another
# process after a crash is never signalled.
is_ours() {
    local state cmdline
    [[ -r /proc/$1/stat ]] || return 1
    # A daemon re-parented to a container's init that never reaps it lingers as a zombie: that is dead.
    state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true)
    [[ -n $state && $state != Z && $state != X ]] || return 1
    # (Not `tr | grep -q`: grep quitting early fails tr with SIGPIPE, which pipefail would count.)
    cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null || true)
    [[ $cmdline == *"$STATE/"* ]]
}

# The recorded pid of a daemon if that process is alive and ours; empty otherwise.
our_pid() {
    local file pid
    file=$(pid_file "$1")
    [[ -r $file ]] || return 0
    pid=$(tr -dc '0-9' 2>/dev/null <"$file" || true)
    if [[ -n $pid ]] && is_ours "$pid"; then
        echo "$pid"
    fi
}

# ---------------------------------------------------------------- install

install_packages() {
    STEP="install packages"
    local missing=() c
    for c in "${COMMANDS[@]}"; do
        command -v "$c" >/dev/null || missing+=("$c")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    [[ $(id -u) -eq 0 ]] || fail "$STEP" "${missing[*]} missing and not root, cannot apt-get install ${PACKAGES[*]}"
    command -v apt-get >/dev/null || fail "$STEP" "${missing[*]} missing and no apt-get"

    # Debian's maintainer scripts start a service unless policy-rc.d says no (exit 101). Daemons started
    # that way would use /etc/slurm and the default munge socket: keep them from starting, but leave an
    # existing policy alone.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\n# temporary, from %s: no service starts while it installs slurm\nexit 101\n' \
            "$0" >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        CREATED_POLICY_RC_D=/usr/sbin/policy-rc.d
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${PACKAGES[@]}" >"$STATE/install.log" 2>&1; then
        fail "$STEP" "apt-get install ${PACKAGES[*]} failed: $(grep -E '^(E|W):' "$STATE/install.log" | tail -n 2 | tr '\n' ' ' | sed 's/ *$//' || true)"
    fi
    cleanup
    CREATED_POLICY_RC_D=""
    for c in "${COMMANDS[@]}"; do
        command -v "$c" >/dev/null || fail "$STEP" "$c still missing after installing ${PACKAGES[*]}"
    done
}

# ---------------------------------------------------------------- configuration

# The first port from $1 up that nothing listens on (and that is not $2, the other daemon's port).
free_port() {
    local port=$1 taken=${2:-}
    while [[ $port == "$taken" ]] || port_in_use "$port"; do
        port=$((port + 1))
    done
    echo "$port"
}

port_in_use() {
    if command -v ss >/dev/null; then
        [[ -n $(ss -Hltn "sport = :$1" 2>/dev/null) ]]
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}

# This node as slurmd sees it: NODE, CPUS, MEM (MB, a little below the physical total: slurmd marks a node
# invalid whose configured memory exceeds what it measures), and TOPOLOGY (sockets/cores/threads).
detect_node() {
    STEP="detect node (slurmd -C)"
    local line key value hw_cpus="" real=""
    TOPOLOGY=""
    # slurmd -C would also read /etc/slurm/slurm.conf: point it at an empty file.
    : >"$STATE/empty.conf"
    line=$(SLURM_CONF="$STATE/empty.conf" slurmd -C 2>/dev/null | head -n 1) || true
    for kv in $line; do
        key=${kv%%=*} value=${kv#*=}
        case $key in
            NodeName) NODE=$value ;;
            CPUs) hw_cpus=$value ;;
            RealMemory) real=$value ;;
            Boards | SocketsPerBoard | CoresPerSocket | ThreadsPerCore) TOPOLOGY+=" $kv" ;;
        esac
    done
    [[ -n $real ]] || fail "$STEP" "no RealMemory in 'slurmd -C' output: $line"
    NODE=${NODE:-$(hostname -s)}
    CPUS=$(nproc)
    # With fewer usable CPUs than the hardware has (an affinity mask), the topology would not add up.
    [[ $hw_cpus == "$CPUS" ]] || TOPOLOGY=""
    local spare=$((real / 20))
    ((spare <= 1024)) || spare=1024
    MEM=$((real - spare))
}

write_config() {
    STEP="write config"
    local ctld_port slurmd_port
    ctld_port=$(free_port 6817)
    slurmd_port=$(free_port 6818 "$ctld_port")
    : >"$STATE/plugstack.conf"
    # Both names given with an address, so an unresolvable hostname does not matter.
    cat >"$STATE/slurm.conf" <<EOF
# Written by tests/cluster/slurm.sh: a one-node throwaway cluster; everything lives in $STATE.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root

# munged listens in STATE_DIR, not at /run/munge/munge.socket.2: tell the plugins where. cred_expire
# (default 120 s) is also how long a requeued job waits before it may start again.
AuthType=auth/munge
AuthInfo=socket=$STATE/munge/munge.socket.2,cred_expire=10
CredType=cred/munge

StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$(pid_file slurmctld)
SlurmdPidFile=$(pid_file slurmd)
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# Read from the config's directory by default, or /etc/slurm for this one: keep both in STATE_DIR.
PlugStackConfig=$STATE/plugstack.conf
MailProg=/bin/true

# A container: no cgroups, no accounting daemon.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none

SchedulerType=sched/backfill
# CPUs (not cores) and memory are what jobs take, so two 1-CPU jobs share a 2-CPU node even with
# hyper-threads; a job without --mem gets its CPUs' share of the memory, not the whole node's.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$((MEM / CPUS))
ReturnToService=2
# SIGTERM on scancel or time limit, SIGKILL this many seconds later.
KillWait=30

NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$CPUS$TOPOLOGY RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    chmod 644 "$STATE/slurm.conf"
    echo "export SLURM_CONF=$STATE/slurm.conf" >"$STATE/env"
}

# ---------------------------------------------------------------- daemons

# Polls "$@" every 0.5 s until it succeeds or $1 seconds pass; meanwhile the daemon named $2 must stay up.
wait_until() {
    local deadline=$((SECONDS + $1)) daemon=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        if [[ -n $daemon && -z $(our_pid "$daemon") ]]; then
            return 2
        fi
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

# The daemons fork into the background and the child writes the pid file a moment after the command
# returns: wait for it, so that from here on a missing process means the daemon died.
await_pid_file() { # $1 daemon, $2... logs
    local daemon=$1 deadline=$((SECONDS + 10))
    shift
    until [[ -n $(our_pid "$daemon") ]]; do
        ((SECONDS < deadline)) || fail "start $daemon" "$daemon exited or wrote no pid file; $(log_tail "$@")"
        sleep 0.1
    done
}

daemon_failed() { # $1 daemon, $2 what did not happen, $3... logs
    local daemon=$1 what=$2
    shift 2
    if [[ -z $(our_pid "$daemon") ]]; then
        fail "start $daemon" "$daemon exited; $(log_tail "$@")"
    fi
    fail "start $daemon" "$what within ${UP_DEADLINE_S}s; $(log_tail "$@")"
}

munge_works() {
    munge -n -S "$STATE/munge/munge.socket.2" | unmunge -S "$STATE/munge/munge.socket.2"
}

start_munged() {
    STEP="start munged"
    local key=$STATE/munge/munge.key
    if [[ ! -s $key ]]; then
        mungekey --create --keyfile="$key" 2>"$STATE/log/mungekey.log" ||
            dd if=/dev/urandom of="$key" bs=1 count=1024 2>/dev/null
    fi
    chmod 600 "$key"
    # munged runs as root (the key's owner); --force lets it start despite its checks on the
    # permissions of the directories above STATE_DIR (e.g. /tmp).
    munged --force \
        --key-file="$key" \
        --socket="$STATE/munge/munge.socket.2" \
        --pid-file="$(pid_file munged)" \
        --log-file="$STATE/log/munged.log" \
        --seed-file="$STATE/munge/munged.seed" \
        2>"$STATE/log/munged.stderr" ||
        fail "$STEP" "munged exited with status $?; $(log_tail "$STATE/log/munged.stderr" "$STATE/log/munged.log")"
    await_pid_file munged "$STATE/log/munged.stderr" "$STATE/log/munged.log"
    wait_until "$UP_DEADLINE_S" munged munge_works ||
        daemon_failed munged "no credential round trip" "$STATE/log/munged.stderr" "$STATE/log/munged.log"
}

start_slurmctld() {
    STEP="start slurmctld"
    local logs=("$STATE/log/slurmctld.stderr" "$STATE/log/slurmctld.log")
    slurmctld -f "$STATE/slurm.conf" 2>"${logs[0]}" ||
        fail "$STEP" "slurmctld exited with status $?; $(log_tail "${logs[@]}")"
    await_pid_file slurmctld "${logs[@]}"
    wait_until "$UP_DEADLINE_S" slurmctld scontrol ping ||
        daemon_failed slurmctld "'scontrol ping' did not answer" "${logs[@]}"
}

node_idle() {
    [[ $(sinfo -h -n "$NODE" -o %T) == idle ]]
}

start_slurmd() {
    STEP="start slurmd"
    local logs=("$STATE/log/slurmd.stderr" "$STATE/log/slurmd.log")
    slurmd -f "$STATE/slurm.conf" 2>"${logs[0]}" ||
        fail "$STEP" "slurmd exited with status $?; $(log_tail "${logs[@]}")"
    await_pid_file slurmd "${logs[@]}"
    wait_until "$UP_DEADLINE_S" slurmd node_idle ||
        daemon_failed slurmd "node $NODE not idle (sinfo: $(sinfo -h -n "$NODE" -o '%T %E' 2>&1 || true))" \
            "${logs[@]}" "$STATE/log/slurmctld.log"
}

job_state() {
    scontrol show job -o "$1" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2 || true
}

job_finished() {
    [[ $(job_state "$1") =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)$ ]]
}

# A batch job and a job step, each within the deadline: proves munge credentials, the slurmd spool and
# slurmd -> srun connections work, not only that the node registered. (Polled here rather than with
# `sbatch --wait`, whose back-off polling added up to 8 s.)
run_first_job() {
    STEP="first job"
    local out=$STATE/log/first-job.out job state
    rm -f "$out"
    job=$(sbatch --parsable -J slurm.sh-check -o "$out" --wrap hostname 2>"$STATE/log/first-job.sbatch") ||
        fail "$STEP" "sbatch --wrap hostname failed: $(log_tail "$STATE/log/first-job.sbatch")"
    wait_until "$UP_DEADLINE_S" "" job_finished "$job" ||
        fail "$STEP" "batch job $job not finished within ${UP_DEADLINE_S}s (state $(job_state "$job")): $(log_tail "$STATE/log/slurmd.log")"
    state=$(job_state "$job")
    [[ $state == COMPLETED && $(cat "$out" 2>/dev/null || true) == "$NODE" ]] ||
        fail "$STEP" "batch job $job ended $state with output '$(cat "$out" 2>/dev/null || true)': $(log_tail "$STATE/log/slurmd.log")"
    timeout "$UP_DEADLINE_S" srun -N1 -J slurm.sh-check true >"$STATE/log/first-job.srun" 2>&1 ||
        fail "$STEP" "srun -N1 true failed or took over ${UP_DEADLINE_S}s: $(log_tail "$STATE/log/first-job.srun" "$STATE/log/slurmd.log")"
}

# Cancels every job of this cluster (their processes would outlive slurmd), then SIGTERM to the daemons
# recorded in STATE_DIR, SIGKILL to those left after STOP_DEADLINE_S. Silent; no error if none runs;
# SURVIVORS lists the pids still alive after SIGKILL.
stop_daemons() {
    local daemons=(slurmd slurmctld munged) d pid pids=() deadline jobs=()
    if [[ -n $(our_pid slurmctld) && -r $STATE/slurm.conf ]]; then
        mapfile -t jobs < <(SLURM_CONF=$STATE/slurm.conf timeout 10 squeue -h -o %i 2>/dev/null || true)
        if [[ ${#jobs[@]} -gt 0 ]]; then
            # SIGKILL at once to all of a job's processes; scancel then drops pending jobs too.
            SLURM_CONF=$STATE/slurm.conf timeout 10 scancel --full --signal=KILL "${jobs[@]}" >/dev/null 2>&1 || true
            SLURM_CONF=$STATE/slurm.conf timeout 10 scancel "${jobs[@]}" >/dev/null 2>&1 || true
            deadline=$((SECONDS + STOP_DEADLINE_S))
            while ((SECONDS < deadline)) &&
                [[ -n $(SLURM_CONF=$STATE/slurm.conf timeout 10 squeue -h -t R,CG,S -o %i 2>/dev/null || true) ]]; do
                sleep 0.5
            done
        fi
    fi
    # The pids are read once: slurmctld removes its pid file while it is still shutting down.
    for d in "${daemons[@]}"; do
        pid=$(our_pid "$d")
        if [[ -n $pid ]]; then
            kill -TERM "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    deadline=$((SECONDS + STOP_DEADLINE_S))
    for pid in "${pids[@]}"; do
        while is_ours "$pid" && ((SECONDS < deadline)); do
            sleep 0.2
        done
        if is_ours "$pid"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    SURVIVORS=()
    for pid in "${pids[@]}"; do
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            is_ours "$pid" || break
            sleep 0.2
        done
        if is_ours "$pid"; then
            SURVIVORS+=("$pid")
        fi
    done
    for d in "${daemons[@]}"; do
        [[ -n $(our_pid "$d") ]] || rm -f "$(pid_file "$d")"
    done
}

# ---------------------------------------------------------------- the node's client config

# Inside a job, Snakemake's SLURM jobstep executor runs the rule through `srun` with every SLURM_* variable but a
# few removed, SLURM_CONF among them. srun then looks where a compute node's client looks: /etc/slurm/slurm.conf,
# then /run/slurm/conf/slurm.conf (a configless node's cache). So this node's /run/slurm/conf points into
# STATE_DIR while the cluster runs; `stop` removes the link, and only if it is still ours.
readonly NODE_CONFIG=/run/slurm/conf

link_node_config() {
    STEP="link $NODE_CONFIG"
    [[ ! -e /etc/slurm/slurm.conf ]] ||
        fail "$STEP" "/etc/slurm/slurm.conf exists: srun inside a Snakemake job would read it (the jobstep executor drops SLURM_CONF); run the cluster tests on a machine without a SLURM of its own"
    if [[ -L $NODE_CONFIG ]] && { [[ ! -e $NODE_CONFIG ]] || left_by_a_stopped_cluster; }; then
        rm -f "$NODE_CONFIG"  # left by a cluster of this script that is gone or no longer runs (killed before `stop`)
    fi
    [[ ! -e $NODE_CONFIG ]] ||
        fail "$STEP" "$NODE_CONFIG exists ($(readlink "$NODE_CONFIG" || echo 'not a link')): another cluster's client config; stop that cluster first"
    mkdir -p "$(dirname "$NODE_CONFIG")"
    ln -s "$STATE" "$NODE_CONFIG"
}

# Whether the node's link points into a STATE_DIR this script made whose daemons all are dead: the link of a run
# that was killed before its `stop` (a live cluster's link is never taken).
left_by_a_stopped_cluster() {
    local target d
    target=$(readlink "$NODE_CONFIG") || return 1
    [[ $target == /* && -e $target/.made-by-slurm.sh ]] || return 1
    for d in munged slurmctld slurmd; do
        [[ -z $(STATE=$target our_pid "$d") ]] || return 1
    done
}

unlink_node_config() {
    if [[ -L $NODE_CONFIG && $(readlink "$NODE_CONFIG") == "$STATE" ]]; then
        rm -f "$NODE_CONFIG"
    fi
}

# ---------------------------------------------------------------- actions

start() {
    local t0=$SECONDS d
    STEP="check STATE_DIR"
    # start clears the folders it writes inside STATE_DIR: only in an empty folder or one this script made.
    if [[ -d $STATE && -n $(ls -A "$STATE") && ! -e $STATE/.made-by-slurm.sh ]]; then
        fail "$STEP" "$STATE holds files this script did not write; give an empty or new folder"
    fi
    mkdir -p "$STATE"
    : >"$STATE/.made-by-slurm.sh"
    for d in munged slurmctld slurmd; do
        [[ -z $(our_pid "$d") ]] || fail "$STEP" "$d already runs from $STATE (pid $(our_pid "$d")); run '$0 stop $STATE' first"
    done
    install_packages
    # A fresh cluster each time: no jobs or node state recovered from an earlier run in this directory.
    rm -rf "$STATE/slurmctld" "$STATE/slurmd" "$STATE/run" "$STATE/log" "$STATE/munge"
    mkdir -p "$STATE/slurmctld" "$STATE/slurmd" "$STATE/run" "$STATE/log" "$STATE/munge"
    # Readable by all, like /etc/slurm and /run/munge: a client not run as root needs the config and socket.
    chmod 755 "$STATE" "$STATE/munge"
    detect_node
    write_config
    export SLURM_CONF=$STATE/slurm.conf
    LAUNCHING=1
    link_node_config
    start_munged
    start_slurmctld
    start_slurmd
    run_first_job
    echo "slurm: up (node $NODE, $CPUS cpus, $MEM MB) in $((SECONDS - t0)) s; source $STATE/env"
}

stop() {
    STEP="stop"
    [[ -d $STATE ]] || return 0
    stop_daemons
    unlink_node_config
    [[ ${#SURVIVORS[@]} -eq 0 ]] || fail "$STEP" "still running after SIGKILL: pids ${SURVIVORS[*]}"
}

main() {
    [[ $# -eq 2 ]] || usage
    ACTION=$1
    STATE=${2%/}
    [[ $STATE == /* && $STATE != / ]] || usage
    case $ACTION in
        start) start ;;
        stop) stop ;;
        *) usage ;;
    esac
}

main "$@"
