# A real Slurm for the tests that need one (sourced inside the work dir): munged, slurmctld and
# slurmd from Debian's packages, each with files under ./slurm (key, socket, state, spool, logs)
# and a slurm.conf written here, on free ports, so nothing of the machine's own configuration is
# read or changed. start_slurm starts one node (this host); start_slurm_two_nodes two, in
# network namespaces. Both exit 77 (CTest: Skipped) with the reason when Slurm is not installed
# or cannot start here; an EXIT trap cancels the jobs and stops the daemons.

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

require_slurm() {
  local c
  for c in munged slurmctld slurmd sbatch srun scontrol squeue sinfo; do
    command -v "$c" >/dev/null || skip "no $c (Debian's slurmctld, slurmd, slurm-client, munge)"
  done
  [[ $(id -u) == 0 ]] || skip "slurmd runs jobs as their users, so this test needs root"
}

start_munge() {
  mkdir -p slurm/state slurm/tmp
  chmod 700 slurm
  head -c 1024 /dev/urandom >slurm/munge.key
  chmod 600 slurm/munge.key
  munged --force --socket="$PWD/slurm/munge.sock" --key-file="$PWD/slurm/munge.key" \
    --pid-file="$PWD/slurm/munged.pid" --log-file="$PWD/slurm/munged.log" \
    --seed-file="$PWD/slurm/munge.seed" || skip "munged did not start: $(tail -n 3 slurm/munged.log)"
}

# write_slurm_conf CONTROLLER ADDRESS NODE_LINES NODE_LIST: slurm.conf for slurmctld on
# CONTROLLER (its host name) at ADDRESS and the nodes of NODE_LINES (NodeName=... lines), all
# in one partition; each slurmd's spool, pid file and log carry its node name (%n).
write_slurm_conf() {
  cat >slurm/slurm.conf <<EOF
ClusterName=nntest
SlurmctldHost=$1($2)
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
SlurmdSpoolDir=$PWD/slurm/spool-%n
SlurmctldPidFile=$PWD/slurm/slurmctld.pid
SlurmdPidFile=$PWD/slurm/slurmd-%n.pid
SlurmctldLogFile=$PWD/slurm/slurmctld.log
SlurmdLogFile=$PWD/slurm/slurmd-%n.log
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
$3
PartitionName=test Nodes=$4 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
  export SLURM_CONF=$PWD/slurm/slurm.conf
}

# wait_slurm_idle NODES: until sinfo shows NODES nodes idle (30 s at most), else skip.
wait_slurm_idle() {
  # Bounded by the clock, not a count: a client that cannot reach slurmctld waits for its
  # MessageTimeout on every call.
  local idle=0 deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    idle=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$' || true)
    ((idle == $1)) && break
    sleep 0.2
  done
  ((idle == $1)) ||
    skip "Slurm did not start ($idle of $1 nodes idle): $(tail -n 3 slurm/slurmctld.log slurm/slurmd-*.log 2>&1)"
}

# probe_step SRUN_ARGS...: a node that reports idle may still be unable to start a job step
# here (a sandbox without the name lookups or process tracking slurmd needs): one short step
# shows it.
probe_step() {
  timeout 30 srun --mpi=list 2>&1 | grep -qw pmix || skip "this Slurm has no PMIx plugin (srun --mpi=list)"
  timeout 60 srun --mpi=pmix "$@" true >slurm/probe.out 2>&1 ||
    skip "Slurm started but cannot run a job step here: $(tail -n 3 slurm/probe.out; tail -n 3 slurm/slurmd-*.log)"
}

start_slurm() {
  require_slurm
  start_munge
  local host
  host=$(hostname -s)
  mkdir -p "slurm/spool-$host"
  write_slurm_conf "$host" 127.0.0.1 "NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN" "$host"
  trap 'stop_slurm; rm -rf "$work" 2>/dev/null || true' EXIT
  slurmctld -D -f "$SLURM_CONF" >slurm/slurmctld.out 2>&1 &
  slurm_pids=$!
  slurmd -D -f "$SLURM_CONF" >slurm/slurmd.out 2>&1 &
  slurm_pids="$slurm_pids $!"
  wait_slurm_idle 1
  probe_step -n 2
}

# start_slurm_two_nodes: a Slurm of two nodes on this machine. Each node is a network namespace
# with a host name of its own (nodea, nodeb), joined to this namespace by a bridge, with its own
# slurmd; slurmctld, munged and the clients stay here. The ranks of a job over both nodes talk
# TCP, as between machines. Skips where namespaces or a bridge are refused.
start_slurm_two_nodes() {
  require_slurm
  command -v ip >/dev/null || skip "no ip (iproute2)"
  command -v nsenter >/dev/null && command -v unshare >/dev/null ||
    skip "no nsenter or unshare (util-linux)"
  netns_tag=nn$$
  netns_net=10.78.$(($$ % 250 + 1))
  trap 'stop_slurm; remove_netns; rm -rf "$work" 2>/dev/null || true' EXIT
  ip link add "b$netns_tag" type bridge 2>ip.err || skip "no bridge here: $(cat ip.err)"
  ip addr add "$netns_net.1/24" dev "b$netns_tag"
  ip link set "b$netns_tag" up
  local name i=1
  for name in nodea nodeb; do
    i=$((i + 1))
    ip netns add "$netns_tag$name" 2>ip.err || skip "no network namespaces here: $(cat ip.err)"
    ip link add "h$netns_tag$i" type veth peer name "n$netns_tag$i"
    ip link set "h$netns_tag$i" master "b$netns_tag" up
    ip link set "n$netns_tag$i" netns "$netns_tag$name"
    ip -n "$netns_tag$name" addr add "$netns_net.$i/24" dev "n$netns_tag$i"
    ip -n "$netns_tag$name" link set lo up
    ip -n "$netns_tag$name" link set "n$netns_tag$i" up
  done
  start_munge
  write_slurm_conf "$(hostname -s)" "$netns_net.1" "NodeName=nodea NodeAddr=$netns_net.2 CPUs=2 State=UNKNOWN
NodeName=nodeb NodeAddr=$netns_net.3 CPUs=2 State=UNKNOWN" "nodea,nodeb"
  slurmctld -D -f "$SLURM_CONF" >slurm/slurmctld.out 2>&1 &
  slurm_pids=$!
  for name in nodea nodeb; do
    mkdir -p "slurm/spool-$name" "slurm/tmp-$name"
    # nsenter enters the network only (ip netns exec would remount /sys, and with it the
    # cgroup file system slurmd reads). unshare gives the node its own host name and its own
    # TmpFS, as a machine has its own /tmp: the PMIx plugin makes a directory per step there,
    # named the same on every node.
    nsenter --net="/run/netns/$netns_tag$name" unshare --uts --mount --propagation private sh -c \
      "hostname $name && mount --bind '$PWD/slurm/tmp-$name' '$PWD/slurm/tmp' &&
       exec slurmd -D -f '$SLURM_CONF'" >"slurm/slurmd-$name.out" 2>&1 &
    slurm_pids="$slurm_pids $!"
  done
  wait_slurm_idle 2
  probe_step -N 2 -n 2
}

remove_netns() {
  [[ -n ${netns_tag:-} ]] || return 0
  ip netns del "${netns_tag}nodea" 2>/dev/null || true
  ip netns del "${netns_tag}nodeb" 2>/dev/null || true
  ip link del "b$netns_tag" 2>/dev/null || true
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

# The requeue helpers of the training jobs (train.cdl with ck<epoch>.nc every 50 epochs).
# newest_checkpoint DIR: the epoch of its newest periodic checkpoint (every 50 epochs; not the
# checkpoint a requeue's SIGTERM leaves), or 0.
newest_checkpoint() {
  local newest=0 f n
  for f in "$1"/ck*.nc; do
    [[ -e $f ]] || continue
    n=${f##*/ck}
    n=${n%.nc}
    [[ $n =~ ^[0-9]+$ ]] && ((n % 50 == 0 && n > newest)) && newest=$n
  done
  echo "$newest"
}
# requeue_after_checkpoint ID DIR EPOCH RESTARTS: once the job has written a checkpoint after
# EPOCH, requeues it, lets it start again at once (a requeued job waits two minutes otherwise)
# and waits until it runs for the RESTARTS-th time. Prints the epoch of the newest checkpoint
# then.
requeue_after_checkpoint() {
  local id=$1 dir=$2 after=$3 reached=0 how=${5:-requeue}
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    reached=$(newest_checkpoint "$dir")
    ((reached > after)) && break
    [[ $(job_state "$id") == COMPLETED ]] && fail "the job ended before a checkpoint after epoch $after: $(tail -5 "$dir/job.log")"
    sleep 0.1
  done
  ((reached > after)) || fail "no checkpoint after epoch $after within 60 s: $(tail -5 "$dir/job.log")"
  if [[ $how == requeue ]]; then
    timeout 30 scontrol requeue "$id" || fail "scontrol requeue $id failed"
  else  # the time-limit warning of --signal=TERM@120, sent now
    timeout 30 scancel --signal=TERM "$id" || fail "scancel --signal=TERM $id failed"
  fi
  local state="" restarts=0
  deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    state=$(job_state "$id")
    restarts=$(timeout 10 scontrol show job "$id" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
    [[ $state == PENDING ]] && timeout 20 scontrol update JobId="$id" StartTime=now >/dev/null 2>&1 || true
    [[ $state == RUNNING && $restarts == "$4" ]] && break
    sleep 0.1
  done
  [[ $state == RUNNING && $restarts == "$4" ]] ||
    fail "the requeued job did not run again (state $state, restarts $restarts)"
  # The run that was requeued may have written more before it ended: the next requeue waits
  # for a checkpoint after all of them.
  newest_checkpoint "$dir"
}
