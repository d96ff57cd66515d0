#!/usr/bin/env bash
# Under a real Slurm of two nodes on this machine (lib/slurm.sh: each node a network namespace
# with its own host name and slurmd, joined by a bridge), a 2-task job with one task per node
# trains under `srun --mpi=pmix` over TCP between the nodes and ends with the network of the same
# job run with both tasks on one node, byte for byte; its ranks ran on nodea and nodeb. Then the
# two-node job is requeued in the middle of its run (`scontrol requeue`, as a preemption does)
# and still ends with that network. Without Slurm, root, network namespaces or PMIx: exit 77
# (Skipped).
# Usage: mpi_slurm_two_nodes.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
source "$here/lib/slurm.sh"
start_slurm_two_nodes

# The 40-user set of lib/mpi.sh (6 updates an epoch), long enough to be requeued once, with a
# checkpoint every 50 epochs.
train_cdl 7
sed -i 's/"Epochs": 6/"Epochs": 600/; s/"CheckpointInterval": 3/"CheckpointInterval": 50, "Resume": "Auto"/' train.cdl
cat >job.sh <<EOF
#!/bin/bash
srun --mpi=pmix sh -c 'echo "task \$SLURM_PROCID on \$(hostname)"'
srun --mpi=pmix "$tools/nn-train" train.cdl
EOF
for dir in one-node two-nodes requeued; do
  mkdir "$dir"
  cp train.cdl config.json input.nc output.nc job.sh "$dir/"
done

submit() {  # submit DIR SBATCH_ARGS...: the job's id
  local dir=$1
  shift
  timeout 30 sbatch --parsable --requeue --open-mode=append --chdir="$PWD/$dir" \
    --output="$PWD/$dir/job.log" "$@" "$PWD/$dir/job.sh"
}

one=$(submit one-node --nodes=1 --ntasks=2)
state=$(wait_job_end "$one" 300)
[[ $state == COMPLETED ]] || fail "the one-node job ended $state: $(tail -5 one-node/job.log)"
two=$(submit two-nodes --nodes=2 --ntasks-per-node=1)
state=$(wait_job_end "$two" 300)
[[ $state == COMPLETED ]] || fail "the two-node job ended $state: $(tail -8 two-nodes/job.log)"
grep -q '^task 0 on nodea$' two-nodes/job.log && grep -q '^task 1 on nodeb$' two-nodes/job.log ||
  fail "the two-node job's tasks did not run on nodea and nodeb: $(grep '^task' two-nodes/job.log)"
[[ $(grep -c '^task [01] on nodea$' one-node/job.log) == 2 ]] ||
  fail "the one-node job's tasks were not both on one node: $(grep '^task' one-node/job.log)"
grep -Eq '(data|model) parallel: 2 ranks' two-nodes/job.log ||
  fail "the two-node job did not train on 2 ranks: $(grep -v '^epoch' two-nodes/job.log | tail -8)"
[[ -s one-node/net.nc ]] || fail "the one-node job wrote no network: $(tail -5 one-node/job.log)"
cmp -s two-nodes/net.nc one-node/net.nc ||
  fail "two nodes ended with another network than one node: $(tail -3 two-nodes/job.log)"

job=$(submit requeued --nodes=2 --ntasks-per-node=1)
first=$(requeue_after_checkpoint "$job" requeued 0 1)
state=$(wait_job_end "$job" 300)
[[ $state == COMPLETED ]] || fail "the requeued two-node job ended $state: $(tail -8 requeued/job.log)"
[[ $(grep -c '^resuming from ' requeued/job.log || true) == 1 ]] ||
  fail "the requeued job's log does not say it resumed once: $(grep -v '^epoch' requeued/job.log | tail -8)"
cmp -s requeued/net.nc one-node/net.nc ||
  fail "the two-node job requeued after epoch $first ended with another network"
loss=$(grep -o 'epoch 600/600: loss [0-9.]*' one-node/job.log)
echo "mpi_slurm_two_nodes: ok (one task on each of nodea and nodeb over TCP = both on one node, byte for byte; requeued after the checkpoint of epoch $first, the same; $loss)"
