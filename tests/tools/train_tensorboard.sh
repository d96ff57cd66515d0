#!/usr/bin/env bash
# nn-train --tensorboard checked with TensorBoard's own reader (EventAccumulator, PyPI package
# tensorboard): every epoch's scalars equal the JSON-lines epoch log's numbers, minibatch scalars
# come every --tensorboard-interval updates, the hyper-parameters are the hparams plugin's; the
# CDL keys do the same; a resumed run (from a checkpoint older than the file, and from a stop
# mid-epoch) continues the steps without duplicates; under mpirun rank 0 alone writes. Skipped
# (exit 77) where no Python with tensorboard is found: $NN_TENSORBOARD_PYTHON, the virtual
# environment .ci/run makes (<build>/tensorboard-venv), or python3.
# Usage: train_tensorboard.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-train" ]] || fail "nn-train was not built"
python=""
for p in "${NN_TENSORBOARD_PYTHON:-}" "$tools/../../tensorboard-venv/bin/python" python3; do
  if [[ -n $p ]] && "$p" -c 'import tensorboard.backend.event_processing.event_accumulator' 2>/dev/null; then
    python=$p
    break
  fi
done
if [[ -z $python ]]; then
  echo "train_tensorboard: SKIP: no Python with the tensorboard package (pip install tensorboard" \
       "into a virtual environment and set NN_TENSORBOARD_PYTHON to its python)"
  exit 77
fi
check() { timeout 120 "$python" "$here/lib/tensorboard_check.py" "$@"; }
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config
# Validation users: their first items as input, their last item held out as the target.
awk -F'\t' 'NR <= 12 { n = split($2, a, ":"); line = $1 "\t";
  for (i = 1; i < n; i++) line = line a[i] (i < n - 1 ? ":" : ""); print line > "vin.txt";
  print $1 "\t" a[n] > "vout.txt" }' ratings.txt
"$tools/nn-generate" -d input -i vin.txt -o vin.nc -f features.idx -s v.idx 2>/dev/null
"$tools/nn-generate" -d output -i vout.txt -o vout.nc -f features.idx -s v.idx 2>/dev/null
train() { "$tools/nn-train" -c config.json -i input.nc -o output.nc -b 8 --alpha 0.5 "$@"; }
steps() { seq -s, "$1" "$2" "$3"; }  # steps FIRST STEP LAST: "2,4,...,16"

# ---- flags: 4 epochs of 4 minibatches (30 examples in 8s), validation, minibatches every 2 ----
train -n net.nc -e 4 --validation vin.nc --validation vout.nc --validation-k 3 \
  --tensorboard runs/a --tensorboard-interval 2 >flags.log 2>&1 || fail "training: $(cat flags.log)"
grep -q '^tensorboard: runs/a/events.out.tfevents.nn-train (view it with: tensorboard --logdir runs/a)$' \
  flags.log || fail "no tensorboard line: $(grep -i tensorboard flags.log)"
check runs/a net.epochs.jsonl --minibatch-steps "$(steps 2 2 16)" \
  --hparams "optimizer=SGD,alpha=0.5,minibatch=8,epochs=4,network=tiny,Hidden.units=8,Hidden.activation=Sigmoid" ||
  fail "TensorBoard's reader disagrees with net.epochs.jsonl"
grep -q 'validation/recall@3' <("$python" -c '
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
a = ea.EventAccumulator(sys.argv[1]); a.Reload(); print(a.Tags()["scalars"])' runs/a) ||
  fail "no validation metric among the scalars"

# ---- CDL keys (relative to the command file), epochs only ----
mkdir -p exp
cat >exp/train.cdl <<'JSON'
{ "Network": "../config.json", "Command": "Train", "RandomSeed": 3,
  "Data": ["../input.nc", "../output.nc"],
  "TrainingParameters": { "Epochs": 3, "MiniBatch": 8, "Alpha": 0.25, "Optimizer": "Adam",
    "CheckpointInterval": 0, "Results": "cdl.nc", "TensorBoard": "tb" } }
JSON
"$tools/nn-train" exp/train.cdl >cdl.log 2>&1 || fail "CDL training: $(cat cdl.log)"
[[ -s exp/tb/events.out.tfevents.nn-train ]] || fail "CDL TensorBoard is relative to the file: $(ls -R exp)"
check exp/tb exp/cdl.epochs.jsonl --hparams "optimizer=Adam,alpha=0.25,seed=3,epochs=3" ||
  fail "CDL run: TensorBoard's reader disagrees with the epoch log"
# A flag overrides the key, and says so.
"$tools/nn-train" exp/train.cdl --tensorboard-interval 3 >cdl2.log 2>&1 || fail "$(cat cdl2.log)"
grep -q "^--tensorboard-interval 3 overrides exp/train.cdl's TensorBoardInterval 0$" cdl2.log ||
  fail "override line: $(grep overrides cdl2.log)"
check exp/tb exp/cdl.epochs.jsonl --minibatch-steps "$(steps 3 3 12)" ||
  fail "a fresh run replaces the file: not so"

# ---- resumed from a checkpoint older than the file: epoch 3 and updates 9-12 are run again ----
train -n res.nc -e 3 --checkpoint-interval 2 --tensorboard runs/res --tensorboard-interval 2 \
  >res1.log 2>&1 || fail "$(cat res1.log)"
train -n res.nc -e 5 --checkpoint-interval 2 --tensorboard runs/res --tensorboard-interval 2 \
  --resume >res2.log 2>&1 || fail "$(cat res2.log)"
grep -q '^resuming from res2.nc$' res2.log || fail "resumed from epoch 2: $(grep resum res2.log)"
check runs/res res.epochs.jsonl --minibatch-steps "$(steps 2 2 20)" --hparams "epochs=5" ||
  fail "resumed run: duplicates or numbers unlike the log's"

# ---- stopped mid-epoch (SIGTERM at the start of update 11, which finishes: 3 of epoch 3) ----
NN_TEST_FAIL_RANK=0 NN_TEST_FAIL_STEP=11 NN_TEST_FAIL_MODE=sigterm \
  train -n stop.nc -e 4 --checkpoint-interval 0 --tensorboard runs/stop --tensorboard-interval 3 \
  >stop1.log 2>&1 && fail "the stopped run exited 0"
grep -q 'stopped by SIGTERM in epoch 3 after minibatch 3 of 4 (update 11)' stop1.log || fail "$(tail -3 stop1.log)"
check runs/stop stop.epochs.jsonl --minibatch-steps "3,6,9" --status none ||
  fail "stopped run's file"
train -n stop.nc -e 4 --checkpoint-interval 0 --tensorboard runs/stop --tensorboard-interval 3 \
  --resume >stop2.log 2>&1 || fail "$(cat stop2.log)"
check runs/stop stop.epochs.jsonl --minibatch-steps "$(steps 3 3 15)" || fail "resumed after a stop"

# ---- under mpirun: rank 0 writes, once ----
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  timeout 300 mpirun -np 2 --oversubscribe "$tools/nn-train" -c config.json -i input.nc \
    -o output.nc -b 8 --alpha 0.5 -n mpi.nc -e 3 --tensorboard runs/mpi --tensorboard-interval 2 \
    >mpi.log 2>&1 || fail "mpirun: $(tail -5 mpi.log)"
  check runs/mpi mpi.epochs.jsonl --minibatch-steps "$(steps 2 2 12)" || fail "mpirun's file"
else
  echo "train_tensorboard: no mpirun; the rank-0 check is left out"
fi

# ---- usage ----
train -n x.nc -e 1 --tensorboard-interval 5 2>err.txt && fail "--tensorboard-interval alone"
grep -q 'needs --tensorboard' err.txt || fail "message: $(cat err.txt)"
echo "train_tensorboard: ok (TensorBoard's reader: $python)"
