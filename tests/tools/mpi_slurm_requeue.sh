#!/usr/bin/env bash
# Under a real Slurm (lib/slurm.sh: munged, slurmctld and slurmd started here, on free ports), a
# 2-task job that trains under `srun --mpi=pmix` with `"Resume": "Auto"` is requeued twice in
# the middle of its run (`scontrol requeue`, as a preemption does) and ends with the network of
# the same job run uninterrupted, byte for byte; its log says it resumed twice, and the
# requeued script itself is unchanged. Then samples/slurm/train.sbatch's ranks get SIGTERM as
# the time-limit warning would send it (`scancel --signal=TERM`): they write a checkpoint, the
# script requeues the job, and it ends with the same network. Without Slurm, root or PMIx: exit 77 (Skipped).
# Usage: mpi_slurm_requeue.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
require_netcdf_bin
source "$here/lib/mpi.sh"
source "$here/lib/slurm.sh"
start_slurm

# The 40-user set of lib/mpi.sh for long enough to be requeued twice (6 updates an epoch, a
# checkpoint every 50 epochs).
train_cdl 7
sed -i 's/"Epochs": 6/"Epochs": 1500/; s/"CheckpointInterval": 3/"CheckpointInterval": 50, "Resume": "Auto"/' train.cdl
cat >job.sh <<EOF
#!/bin/bash
srun --mpi=pmix "$tools/nn-train" train.cdl
EOF
for dir in whole requeued signalled; do
  mkdir "$dir"
  cp train.cdl config.json input.nc output.nc job.sh "$dir/"
done

submit() {  # submit DIR: the job's id
  timeout 30 sbatch --parsable --ntasks=2 --requeue --open-mode=append --chdir="$PWD/$1" \
    --output="$PWD/$1/job.log" "$PWD/$1/job.sh"
}
whole=$(submit whole)
state=$(wait_job_end "$whole" 180)
[[ $state == COMPLETED ]] || fail "the uninterrupted job ended $state: $(tail -5 whole/job.log)"
[[ -s whole/net.nc ]] || fail "the uninterrupted job wrote no network: $(tail -5 whole/job.log)"

job=$(submit requeued)
first=$(requeue_after_checkpoint "$job" requeued 0 1)
second=$(requeue_after_checkpoint "$job" requeued "$first" 2)
state=$(wait_job_end "$job" 180)
[[ $state == COMPLETED ]] || fail "the requeued job ended $state: $(tail -5 requeued/job.log)"
restarts=$(timeout 20 scontrol show job "$job" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
[[ $restarts == 2 ]] || fail "the job was restarted ${restarts:-?} times, not 2"
resumed=$(grep -c '^resuming from ' requeued/job.log || true)
[[ $resumed == 2 ]] || fail "the log says 'resuming from' $resumed times, not 2: $(grep -v "^epoch\|^checkpoint" requeued/job.log)"
cmp -s requeued/net.nc whole/net.nc ||
  fail "the job requeued twice ended with another network than the uninterrupted job's"
grep -o 'epoch 1500/1500: loss [0-9.]*' whole/job.log >whole.loss
grep -o 'epoch 1500/1500: loss [0-9.]*' requeued/job.log >requeued.loss
[[ -s whole.loss ]] && cmp -s whole.loss requeued.loss ||
  fail "last loss: $(cat whole.loss) uninterrupted, $(cat requeued.loss) requeued"
# The shipped sbatch script, its GPU request taken away, as the time limit approaches.
src_dir=$(realpath "$2")
job=$(NN_TRAIN="$tools/nn-train" timeout 30 sbatch --parsable --gres=none --ntasks-per-node=2 \
  --chdir="$PWD/signalled" --output="$PWD/signalled/job.log" "$src_dir/samples/slurm/train.sbatch")
third=$(requeue_after_checkpoint "$job" signalled 0 1 signal)
state=$(wait_job_end "$job" 180)
[[ $state == COMPLETED ]] || fail "train.sbatch ended $state: $(tail -5 signalled/job.log)"
grep -q '^train.sbatch: the ranks stopped with a checkpoint; requeueing' signalled/job.log ||
  fail "train.sbatch did not requeue itself: $(grep -v '^epoch' signalled/job.log | tail -8)"
grep -q '^nn-train: stopped by SIGTERM' signalled/job.log ||
  fail "train.sbatch: the ranks did not stop with a checkpoint: $(grep -v '^epoch' signalled/job.log | tail -8)"
cmp -s signalled/net.nc whole/net.nc || fail "train.sbatch: another network than the uninterrupted job's"
echo "mpi_slurm_requeue: ok (requeued twice, restarting after the checkpoints of epochs $first and $second; $(cat whole.loss))"
