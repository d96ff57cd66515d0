# Set-up shared by the mpi_*.sh tool tests (sourced after common.sh, inside the work dir): mpirun
# environment (oversubscribed: CI has 2 cores), run_np, the 40-user data set, a network with
# dropout and denoising, train_cdl, and comparison helpers.
# Without mpirun the test cannot run: exit 77, which CTest reports as Skipped (SKIP_RETURN_CODE),
# never as a pass.
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NN_MPI_TIMEOUT=60
run_np() {  # run_np N tool args...: N ranks (1 = no mpirun), bounded in time
  local n=$1
  shift
  if [[ $n == 1 ]]; then timeout 120 "$@"; else timeout 120 mpirun -np "$n" --oversubscribe "$@"; fi
}

# 40 users over 24 items in 3 tastes.
python3 - <<'PY'
import random
random.seed(5)
with open("ratings.txt", "w") as f:
    for u in range(40):
        t = u % 3
        items = [f"m{t*8+j}" for j in range(8) if random.random() < 0.7] or [f"m{t*8}"]
        f.write(f"u{u}\t" + ":".join(items) + "\n")
PY
"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx 2>/dev/null
cat >config.json <<'JSON'
{ "Name": "tiny", "ErrorFunction": "CrossEntropy", "Denoising": { "p": 0.2 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
# pin_parallel MODE IN OUT: IN with "Parallel": MODE on the Hidden and Output layers (Data or
# Model; the rule of model/parallel_plan.h picks otherwise).
pin_parallel() {
  sed -E 's/("Kind": "(Hidden|Output)",)/\1 "Parallel": "'"$1"'",/' "$2" >"$3"
}
# train_cdl MINIBATCH: 40 examples in batches of MINIBATCH (7: uneven 3-way splits; 13: a last
# batch of 1 row, so two of three ranks have nothing to do in that step).
train_cdl() {
  cat >train.cdl <<JSON
{ "Version": 0.9, "Network": "config.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 6, "MiniBatch": $1, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0.001, "CheckpointName": "ck", "CheckpointInterval": 3, "Results": "net.nc" } }
JSON
}
losses() { grep -o 'epoch [0-9]*/[0-9]*: loss [0-9.]*' "$1" | awk '{print $4}'; }
# close A B TOL: every number of A within TOL (relative, floor 1e-3) of B's.
close() {
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
a, b = (re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", open(f).read()) for f in sys.argv[1:3])
tol = float(sys.argv[3])
assert len(a) == len(b) and a, f"{len(a)} vs {len(b)} numbers"
for x, y in zip(map(float, a), map(float, b)):
    assert abs(x - y) <= tol * max(abs(y), 1e-3), f"{x} vs {y}"
PY
}
weights() { ncdump -v weight0_weights,weight1_weights "$1" | sed -n '/data:/,$p'; }
predict() {  # predict N NET OUT [args]: top-10 of every user, seen items excluded
  local n=$1 net=$2 out=$3
  shift 3
  run_np "$n" "$tools/nn-predict" -n "$net" -r ratings.txt -i features.idx -o features.idx \
    -f ratings.txt -k 10 "$@" >"$out" 2>predict.log
}

