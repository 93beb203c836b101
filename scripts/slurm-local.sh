#!/usr/bin/env bash
# A single-node SLURM on this machine, for testing sweeps against a real batch system:
#   scripts/slurm-local.sh start   install (apt-get) if needed, configure, start; print SLURM_CONF
#   scripts/slurm-local.sh stop    stop the daemons it started
# One node (this machine: its CPUs, half its memory) in one partition `debug`, no accounting.
# Everything it writes is under $TRACEWATT_SLURM_DIR (default /tmp/tracewatt-slurm): its
# slurm.conf, state, logs and pid files; /etc/slurm is left alone, so the SLURM commands find
# this cluster through SLURM_CONF=$TRACEWATT_SLURM_DIR/slurm.conf only. Containers have no
# systemd and the packages start no service: the daemons are started here, munged as the munge
# user, then slurmctld, then slurmd. Needs root and apt-get (or the packages installed); exits 3
# saying why where it cannot run, 1 on another failure.
set -euo pipefail

DIR="${TRACEWATT_SLURM_DIR:-/tmp/tracewatt-slurm}"
CONF="$DIR/slurm.conf"

die() { echo "slurm-local.sh: $*" >&2; exit 1; }
cannot() { echo "slurm-local.sh: cannot start SLURM here: $*" >&2; exit 3; }

stop_pid() {
  local f="$1" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$f"
}

stop() {
  # slurmd ends the jobs' steps it runs; munged only if this script started it.
  stop_pid "$DIR/slurmd.pid"
  stop_pid "$DIR/slurmctld.pid"
  stop_pid "$DIR/munged.pid"
}

install() {
  local missing=()
  for c in slurmctld slurmd sbatch munged; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || cannot "${missing[*]} missing, and installing them needs root"
  command -v apt-get >/dev/null 2>&1 || cannot "${missing[*]} missing, and apt-get is not available"
  echo "slurm-local.sh: installing slurmctld slurmd slurm-client munge (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurmctld slurmd \
      slurm-client munge >/dev/null; } || cannot "apt-get could not install SLURM"
}

start() {
  [ "$(id -u)" = 0 ] || cannot "the daemons run as root (SlurmUser=root), and this is uid $(id -u)"
  install
  stop
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  local host cpus mem_mb
  host="$(hostname -s)"
  cpus="$(nproc)"
  mem_mb=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 / 2 ))
  cat > "$CONF" <<EOF
# Written by scripts/slurm-local.sh: a single-node cluster for tests.
ClusterName=tracewatt-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

  # munge: its socket directory, owned by the munge user, which the daemon runs as.
  if ! pgrep -x munged >/dev/null 2>&1; then
    [ -f /etc/munge/munge.key ] || { mungekey --create >/dev/null 2>&1 || die "no munge key"; }
    chown munge:munge /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid || die "munged did not start"
    cp /run/munge/munged.pid "$DIR/munged.pid"
  fi

  slurmctld -f "$CONF" || die "slurmctld did not start (see $DIR/log/slurmctld.log)"
  slurmd -f "$CONF" || die "slurmd did not start (see $DIR/log/slurmd.log)"

  # Ready when the node takes jobs.
  export SLURM_CONF="$CONF"
  for _ in $(seq 100); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then
      echo "SLURM_CONF=$CONF"
      return 0
    fi
    sleep 0.2
  done
  die "the node did not become idle within 20 s (sinfo: $(sinfo -h -N -o '%T %E' 2>&1))"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
