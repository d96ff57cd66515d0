#!/usr/bin/env bash
# nn-train against DSSTNE's train flags (utils/Train.cpp; man nn-train: -c -i -o -n -b -e -alpha
# -lambda -lambda1 -mu -mu1, and -d which DSSTNE lists but ignores) and the CDL keys of DSSTNE's
# CDL reader (docs/config-reference.md, "Command file (CDL)": Version, Network, Command, Data,
# RandomSeed, TrainingParameters.*): each one is shown to take effect, through the training log
# and the training state stored in the network file.
# Usage: train_flags.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
command -v ncdump >/dev/null || fail "needs ncdump (netcdf-bin)"
# att FILE NAME: a global attribute's value as ncdump prints it (without the type suffix).
att() { ncdump -h "$1" | sed -n "s/^[[:space:]]*:$2 = \(.*\) ;\$/\1/p" | sed 's/[fULL]*$//; s/"//g'; }
weights() { ncdump -v weight0_weights "$1" | sed -n '/^ weight0_weights =/,$p'; }

awk 'BEGIN { for (u = 0; u < 40; u++) { t = u % 3; line = "u" u "\t";
       for (j = 0; j < 8; j++) if ((u * 7 + j * 3) % 10 < 7) line = line "m" (t * 8 + j) ":";
       print substr(line, 1, length(line) - 1) } }' >ratings.txt
tiny_datasets "$tools"
tiny_config

# ---- DSSTNE's defaults: -b 1024, -e 40, -alpha 0.025, -lambda 0.0001, SGD, seed 12134,
#      checkpoints every 10 epochs named <-n without .nc><epoch>.nc ----
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc 2>defaults.log
grep -q '^training: 40 examples, minibatch 1024, .* SGD alpha=0.025 lambda=0.0001, ' defaults.log ||
  fail "defaults: $(grep training: defaults.log)"
grep -q '^epoch 40/40:' defaults.log || fail "40 epochs by default"
# (-n net.nc names them net20.nc; DSSTNE's train named them net.nc20.nc.)
for e in 20 30 40; do [[ -s net$e.nc ]] || fail "checkpoint net$e.nc"; done
[[ ! -e net5.nc && ! -e net.nc20.nc ]] || fail "unexpected checkpoint"
# Only the newest 3 checkpoints stay (--checkpoints-kept, CDL CheckpointsKept; DSSTNE kept all).
[[ ! -e net10.nc ]] || fail "checkpoint net10.nc should have been removed (3 kept)"
grep -q '^checkpoint: removed net10.nc (keeping the newest 3)' defaults.log ||
  fail "removal not logged: $(grep checkpoint: defaults.log)"
[[ $(att net.nc nn_training_seed) == 12134 ]] || fail "default seed: $(att net.nc nn_training_seed)"
[[ $(att net.nc nn_training_epoch) == 40 ]] || fail "epoch count stored"
rm -f net.nc*

# ---- every flag, single-dash spellings as DSSTNE; -d is accepted and ignored ----
"$tools/nn-train" -d gl -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 3 -alpha 0.05 \
  -lambda 0.001 -lambda1 0.0002 -mu 0.8 -mu1 0.99 --optimizer Adam 2>flags.log
grep -q '^training: 40 examples, minibatch 8, .* Adam alpha=0.05 lambda=0.001 lambda1=0.0002 mu=0.8 mu1=0.99, ' flags.log ||
  fail "flags: $(grep training: flags.log)"
grep -q '^epoch 3/3:' flags.log && ! grep -q '^epoch 4/' flags.log || fail "-e 3"
[[ $(att net.nc nn_training_minibatch) == 8 && $(att net.nc nn_training_step) == 15 ]] ||
  fail "-b 8: 5 updates per epoch for 3 epochs"
[[ $(att net.nc nn_training_mu1) == 0.99 && $(att net.nc nn_training_lambda1) == 0.0002 ]] ||
  fail "stored mu1/lambda1"
# -mu1 0 (DSSTNE's default) means Adam's usual 0.999.
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 1 -mu1 0 --optimizer Adam
[[ $(att net.nc nn_training_mu1) == 0.999 ]] || fail "-mu1 0 should give 0.999"
# -n is replaced atomically (DSSTNE refused an existing file); -i may equal -o.
cp net.nc old.nc
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net.nc -b 8 -e 1 --seed 99
cmp -s net.nc old.nc && fail "-n should have been replaced"
[[ $(att net.nc nn_training_seed) == 99 ]] || fail "--seed"
rm -f net.nc*
# Missing required flags and bad values are usage errors (exit 2).
for args in "-i input.nc -o output.nc -n x.nc" "-c config.json -o output.nc -n x.nc" \
  "-c config.json -i input.nc -n x.nc" "-c config.json -i input.nc -o output.nc" \
  "-c config.json -i input.nc -o output.nc -n x.nc -b 0" \
  "-c config.json -i input.nc -o output.nc -n x.nc -alpha fast"; do
  set +e
  # shellcheck disable=SC2086
  "$tools/nn-train" $args 2>err.txt
  rc=$?
  set -e
  [[ $rc == 2 ]] && grep -q '^nn-train: error:' err.txt || fail "nn-train $args: rc=$rc $(cat err.txt)"
  [[ ! -e x.nc ]] || fail "output left by a usage error"
done

# ---- CDL keys ----
cat >train.cdl <<'JSON'
{ "Version": 0.8, "Network": "config.json", "Command": "Train", "RandomSeed": 5,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 4, "MiniBatch": 10, "Alpha": 0.2, "Lambda": 0.003,
    "mu": 0.7, "AlphaInterval": 2, "AlphaMultiplier": 0.5, "Optimizer": "Nesterov",
    "CheckpointName": "snap", "CheckpointInterval": 2, "Results": "result.nc" } }
JSON
"$tools/nn-train" train.cdl 2>cdl.log
grep -q '^training: 40 examples, minibatch 10, .* Nesterov alpha=0.2 lambda=0.003 mu=0.7 alpha\*=0.5 every 2 epochs, ' cdl.log ||
  fail "CDL parameters: $(grep training: cdl.log)"
grep -q '^epoch 4/4:' cdl.log || fail "Epochs 4"
[[ -s result.nc && -s snap2.nc && -s snap4.nc && ! -e snap1.nc && ! -e snap3.nc ]] ||
  fail "Results/CheckpointName/CheckpointInterval: $(ls)"
[[ $(att result.nc nn_training_seed) == 5 ]] || fail "RandomSeed"
[[ $(att result.nc nn_training_step) == 16 ]] || fail "MiniBatch 10: 4 updates x 4 epochs"
[[ $(att result.nc nn_training_optimizer) == 3 ]] || fail "Optimizer Nesterov (code 3)"
# AlphaInterval 2, AlphaMultiplier 0.5: 0.2 for epochs 1-2, 0.1 for 3-4, 0.05 after epoch 4.
awk -v a="$(att snap2.nc nn_training_alpha)" -v b="$(att result.nc nn_training_alpha)" \
  'BEGIN { exit !(a > 0.0999 && a < 0.1001 && b > 0.0499 && b < 0.0501) }' ||
  fail "learning-rate schedule: $(att snap2.nc nn_training_alpha) $(att result.nc nn_training_alpha)"
# The same seed gives the same network; another seed another one.
mv result.nc first.nc
"$tools/nn-train" -q train.cdl
[[ $(weights result.nc) == $(weights first.nc) ]] || fail "RandomSeed 5 twice should give the same weights"
sed 's/"RandomSeed": 5/"RandomSeed": 6/' train.cdl >seed6.cdl
"$tools/nn-train" -q seed6.cdl
[[ $(weights result.nc) != $(weights first.nc) ]] || fail "another RandomSeed should change the weights"
# ---- flags given with a CDL file override its keys, and say so ----
rm -f snap*.nc
"$tools/nn-train" train.cdl -e 1 -b 40 --alpha 0.5 --lambda 0 --mu 0.1 --optimizer SGD \
  --checkpoint-interval 1 --seed 77 --validation-k 5 --no-keep-best 2>override.log
for line in "--epochs 1 overrides train.cdl's Epochs 4" "--batch 40 overrides train.cdl's MiniBatch 10" \
  "--alpha 0.5 overrides train.cdl's Alpha 0.2" "--lambda 0 overrides train.cdl's Lambda 0.003" \
  "--mu 0.1 overrides train.cdl's mu 0.7" "--optimizer SGD overrides train.cdl's Optimizer Nesterov" \
  "--checkpoint-interval 1 overrides train.cdl's CheckpointInterval 2" \
  "--seed 77 overrides train.cdl's RandomSeed 5" "--validation-k 5 overrides train.cdl's ValidationK 10" \
  "--no-keep-best overrides train.cdl's KeepBest true"; do
  grep -qxF -- "$line" override.log || fail "override not printed: $line: $(head -12 override.log)"
done
grep -q '^training: 40 examples, minibatch 40, .* SGD alpha=0.5 lambda=0[ ,]' override.log ||
  fail "overrides not applied: $(grep training: override.log)"
grep -q '^epoch 1/1:' override.log || fail "-e 1 with a CDL"
[[ $(att result.nc nn_training_step) == 1 && $(att result.nc nn_training_seed) == 77 ]] ||
  fail "stored state after overrides: step $(att result.nc nn_training_step)"
[[ -s snap1.nc ]] || fail "--checkpoint-interval 1 with a CDL"
grep -q overrides cdl.log && fail "no flags, no override lines"
# Checkpoints kept: CDL key and flag (0 keeps all).
rm -f snap*.nc
sed 's/"CheckpointInterval": 2,/"CheckpointInterval": 1, "CheckpointsKept": 2,/' train.cdl >kept.cdl
"$tools/nn-train" -q kept.cdl
[[ "$(ls snap*.nc | sort | tr '\n' ' ')" == "snap3.nc snap4.nc " ]] || fail "CheckpointsKept 2: $(ls snap*.nc)"
rm -f snap*.nc
"$tools/nn-train" -q kept.cdl --checkpoints-kept 0
[[ $(ls snap*.nc | wc -l) == 4 ]] || fail "--checkpoints-kept 0 keeps all: $(ls snap*.nc)"

# ---- RandomSeed absent or -1: a real random seed, printed, that repeats the run ----
sed 's/"RandomSeed": 5,//' train.cdl >noseed.cdl
sed 's/"RandomSeed": 5,/"RandomSeed": -1,/' train.cdl >minus1.cdl
"$tools/nn-train" noseed.cdl 2>noseed1.log
cp result.nc noseed1.nc
"$tools/nn-train" minus1.cdl 2>noseed2.log
seed1=$(sed -n 's/^random seed \([0-9]*\) (RandomSeed is absent or -1;.*/\1/p' noseed1.log)
seed2=$(sed -n 's/^random seed \([0-9]*\) (RandomSeed is absent or -1;.*/\1/p' noseed2.log)
[[ -n $seed1 && -n $seed2 ]] || fail "random seed not printed: $(head -3 noseed1.log)"
[[ $seed1 != "$seed2" ]] || fail "two runs without RandomSeed got the same seed $seed1"
[[ $(att noseed1.nc nn_training_seed) == "$seed1" ]] || fail "printed seed is not the one used"
"$tools/nn-train" -q noseed.cdl --seed "$seed1"
[[ $(weights result.nc) == $(weights noseed1.nc) ]] || fail "--seed <printed seed> should repeat the run"

# Data as a single string (DSSTNE's form) is read; here it lacks the output dataset.
sed 's/"Data": \["input.nc", "output.nc"\]/"Data": "input.nc"/' train.cdl >one_file.cdl
grep -q '"Data": "input.nc"' one_file.cdl || fail "sed did not edit Data"
set +e
"$tools/nn-train" one_file.cdl >/dev/null 2>err.txt
rc=$?
set -e
[[ $rc == 1 ]] && grep -q "needs dataset 'output', which was not loaded; available: 'input'" err.txt ||
  fail "Data as one string: rc=$rc $(cat err.txt)"
# Command Predict belongs to nn-predict.
sed 's/"Command": "Train"/"Command": "Predict"/' train.cdl >predict.cdl
set +e
"$tools/nn-train" predict.cdl 2>err.txt
rc=$?
set -e
[[ $rc == 2 ]] && grep -q 'nn-train runs Train and Validate' err.txt || fail "Predict CDL: rc=$rc $(cat err.txt)"

# ---- --backend / --device and the CDL keys Backend / Device ----
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n be.nc -b 8 -e 1 --backend cpu \
  --device 3 2>be.log || fail "--backend cpu --device 3 (the device index is CUDA's only)"
grep -q 'backend cpu' be.log || fail "backend not reported: $(grep training: be.log)"
set +e
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n be.nc -e 1 --backend gpu 2>err.txt
rc=$?
"$tools/nn-train" -c config.json -i input.nc -o output.nc -n be.nc -e 1 --backend cuda \
  >cuda.log 2>cuda_err.txt
cuda_rc=$?
set -e
[[ $rc != 0 ]] && grep -q "backend 'gpu': unknown; expected one of cpu, cuda, auto" err.txt ||
  fail "--backend gpu: rc=$rc $(cat err.txt)"
# Without a usable GPU (or a CUDA build) --backend cuda is a clear error; with one it trains.
if [[ $cuda_rc != 0 ]]; then
  grep -Eq "no usable CUDA device|this build has no CUDA support" cuda_err.txt ||
    fail "--backend cuda without a GPU: $(cat cuda_err.txt)"
fi
sed 's/"Command": "Train"/"Backend": "cpu", "Device": 2, "Command": "Train"/' train.cdl >be.cdl
"$tools/nn-train" be.cdl 2>becdl.log || fail "CDL Backend/Device"
grep -q 'backend cpu' becdl.log || fail "CDL Backend cpu: $(grep training: becdl.log)"
sed 's/"Command": "Train"/"Backend": "gpu", "Command": "Train"/' train.cdl >bad_be.cdl
set +e
"$tools/nn-train" bad_be.cdl 2>err.txt
rc=$?
set -e
[[ $rc != 0 ]] && grep -q 'Backend: expected "cpu", "cuda" or "auto", got "gpu"' err.txt ||
  fail "CDL Backend gpu: rc=$rc $(cat err.txt)"

echo "train_flags: all checks passed"
