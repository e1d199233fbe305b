#!/usr/bin/env bash
# A one-node Slurm cluster on 127.0.0.1 for the slurm runner's tests, entirely inside DIR:
# its own munge key and socket, slurm.conf, state, spool, logs and free ports, so that it
# touches nothing of the machine's own Slurm or munge.
#   tests/slurm/cluster.sh start DIR   starts munged, slurmctld and slurmd; waits until the
#                                      node is idle; DIR/env holds SLURM_CONF for the clients
#   tests/slurm/cluster.sh stop DIR    stops the daemons started by `start DIR`
# Needs root (slurmd runs jobs as their users) and Debian's slurm-wlm and munge.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}
(($# == 2)) || usage
action=$1
dir=$(realpath -m "$2")

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

daemon_pid() {  # daemon_pid NAME: the pid its pid file names, if that process still runs
  local file=$dir/run/$1.pid pid
  [ -f "$file" ] || return 1
  pid=$(cat "$file")
  kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start() {
  [ "$(id -u)" -eq 0 ] || { echo "cluster.sh: must run as root (slurmd starts jobs as their users)" >&2; exit 1; }
  for program in munged slurmctld slurmd sbatch sinfo; do
    command -v "$program" >/dev/null || { echo "cluster.sh: $program not found; install slurm-wlm and munge" >&2; exit 1; }
  done
  mkdir -p "$dir"/{state,spool,log,run}
  local host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(free_port); done

  head -c 1024 /dev/urandom >"$dir/munge.key"
  chmod 600 "$dir/munge.key"
  munged --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed" --force

  # CPUs=4 on a smaller machine (config_overrides) and OverSubscribe so that several
  # stand-in jobs run at once; MinJobAge keeps finished jobs visible to scontrol, which
  # the runner and the tests read (there is no accounting database); jobcomp/filetxt
  # keeps one line per finished job with its times for the overlap checks.
  cat >"$dir/slurm.conf" <<EOF
ClusterName=diagnose-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 RealMemory=2000 State=UNKNOWN
PartitionName=short Nodes=$host Default=YES MaxTime=2:00:00 OverSubscribe=FORCE:4 State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  echo "export SLURM_CONF=$SLURM_CONF" >"$dir/env"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  local waited=0
  until [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; do
    if ((waited >= 300)); then
      echo "cluster.sh: the node did not become idle within 30 s" >&2
      sinfo >&2 || true
      tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
      stop
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  echo "cluster.sh: one-node cluster up (SLURM_CONF=$SLURM_CONF)"
}

stop() {
  local name pid
  if [ -f "$dir/slurm.conf" ] && daemon_pid slurmctld >/dev/null; then
    # Jobs of this cluster only (its own slurm.conf): slurmstepd would outlive slurmd.
    export SLURM_CONF=$dir/slurm.conf
    scancel --full --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 1 100); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  for name in slurmd slurmctld munged; do
    pid=$(daemon_pid "$name") || continue
    kill "$pid"
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  done
  return 0
}

case $action in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
