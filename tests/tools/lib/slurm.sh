# A real single-host Slurm for the tests that need one (sourced inside the work dir): munged,
# slurmctld and slurmd from Debian's packages, each with files under ./slurm (key, socket, state,
# spool, logs) and a slurm.conf written here, on free ports, so nothing of the machine's own
# configuration is read or changed. start_slurm exits 77 (CTest: Skipped) with the reason when
# Slurm is not installed or cannot start here; an EXIT trap cancels the jobs and stops the
# daemons.

skip() {
  echo "SKIP: $*"
  exit 77
}

stop_slurm() {
  [[ -n ${SLURM_CONF:-} ]] || return 0
  # This cluster's jobs only (SLURM_CONF names it): cancelled, and gone before the daemons stop.
  timeout 20 scancel --full --signal=KILL --user=root >/dev/null 2>&1 || true
  local deadline=$((SECONDS + 20))
  while ((SECONDS < deadline)); do
    [[ -z $(timeout 5 squeue -h 2>/dev/null || true) ]] && break
    sleep 0.2
  done
  local pid
  for pid in ${slurm_pids:-}; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in ${slurm_pids:-}; do kill -KILL "$pid" 2>/dev/null || true; done
  # A step daemon that outlived its job: ours work in this directory (another Slurm's do not).
  for pid in $(pgrep -f '^slurmstepd' || true); do
    [[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$PWD"* ]] && kill -KILL "$pid" 2>/dev/null || true
  done
  pkill -TERM -f -- "--socket=$PWD/slurm/munge.sock" 2>/dev/null || true
  # Gone before the work directory is removed (they write their logs into it).
  for pid in ${slurm_pids:-}; do wait "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    pgrep -f -- "--socket=$PWD/slurm/munge.sock" >/dev/null || break
    sleep 0.1
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_slurm() {
  local c
  for c in munged slurmctld slurmd sbatch srun scontrol squeue sinfo; do
    command -v "$c" >/dev/null || skip "no $c (Debian's slurmctld, slurmd, slurm-client, munge)"
  done
  [[ $(id -u) == 0 ]] || skip "slurmd runs jobs as their users, so this test needs root"
  mkdir -p slurm/state slurm/spool slurm/tmp
  chmod 700 slurm
  head -c 1024 /dev/urandom >slurm/munge.key
  chmod 600 slurm/munge.key
  munged --force --socket="$PWD/slurm/munge.sock" --key-file="$PWD/slurm/munge.key" \
    --pid-file="$PWD/slurm/munged.pid" --log-file="$PWD/slurm/munged.log" \
    --seed-file="$PWD/slurm/munge.seed" || skip "munged did not start: $(tail -n 3 slurm/munged.log)"
  local host
  host=$(hostname -s)
  cat >slurm/slurm.conf <<EOF
ClusterName=nntest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$PWD/slurm/munge.sock
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$PWD/slurm/state
TmpFS=$PWD/slurm/tmp
FirstJobId=$((RANDOM * 30 + 1000))
SlurmdSpoolDir=$PWD/slurm/spool
SlurmctldPidFile=$PWD/slurm/slurmctld.pid
SlurmdPidFile=$PWD/slurm/slurmd.pid
SlurmctldLogFile=$PWD/slurm/slurmctld.log
SlurmdLogFile=$PWD/slurm/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
JobRequeue=1
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
KillWait=30
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  export SLURM_CONF=$PWD/slurm/slurm.conf
  trap 'stop_slurm; rm -rf "$work" 2>/dev/null || true' EXIT
  slurmctld -D -f "$SLURM_CONF" >slurm/slurmctld.out 2>&1 &
  slurm_pids=$!
  slurmd -D -f "$SLURM_CONF" >slurm/slurmd.out 2>&1 &
  slurm_pids="$slurm_pids $!"
  # Bounded by the clock, not a count: a client that cannot reach slurmctld waits for its
  # MessageTimeout on every call.
  local state="" deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    state=$(timeout 5 sinfo -h -o %T 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.2
  done
  [[ $state == idle ]] ||
    skip "Slurm did not start (node state '$state'): $(tail -n 3 slurm/slurmctld.log slurm/slurmd.log 2>&1)"
  timeout 30 srun --mpi=list 2>&1 | grep -qw pmix || skip "this Slurm has no PMIx plugin (srun --mpi=list)"
  # A node that reports idle may still be unable to start a job step here (a sandbox without
  # the name lookups or process tracking slurmd needs): one short step shows it.
  timeout 60 srun --mpi=pmix -n 2 true >slurm/probe.out 2>&1 ||
    skip "Slurm started but cannot run a job step here: $(tail -n 3 slurm/probe.out; tail -n 3 slurm/slurmd.log)"
}

# job_state ID: PENDING, RUNNING, COMPLETED, FAILED, ... ("" once Slurm has forgotten the job).
job_state() {
  timeout 10 scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

# wait_job_end ID SECONDS: waits until the job has left the queue for good; prints its state.
wait_job_end() {
  local state="" deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    state=$(job_state "$1")
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | "") break ;; esac
    sleep 0.2
  done
  echo "$state"
}
