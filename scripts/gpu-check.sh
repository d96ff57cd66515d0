#!/usr/bin/env bash
# The GPU check, one command. On a machine with a GPU it runs: every CUDA-labelled test (each kernel
# family on the CUDA backend against the CPU backend), the backend unit tests' CUDA instances, the
# NCCL communicator tests, the gradient check on CUDA, a training run and a prediction run with
# --backend cuda against --backend cpu, BF16 training and scoring, Variational training, streamed
# data, CUDA graphs against launching call by call, blocked top-K and nn-serve under 32 concurrent
# clients on CUDA, mpirun -np 2 (CPU, then
# both ranks on the GPU) against one process, sampled against full output at 1,000,000 items, a
# convolutional network,
# the MovieLens-20M-shaped benchmark (nn-train's step with its floor, FP32, TF32 and BF16) next to
# PyTorch on the same GPU, and compute-sanitizer (memcheck, then racecheck) on a subset in
# whatever time is left. Writes a Markdown report, a results table, bench.jsonl and the logs
# (docs/cuda-backend.md, "The GPU check"; keep them with scripts/gpu-results-save.sh).
#
# Usage:
#   scripts/gpu-check.sh --bundle ARCHIVE   check with the archive of scripts/gpu-bundle.sh (for a
#                                           GPU machine without this project's packages)
#   scripts/gpu-check.sh                    build here with CUDA first (needs the packages of
#                                           scripts/setup.sh), then check
# Environment:
#   NN_CHECK_OUT     where report.md, results.tsv, bench.jsonl and logs.tar.xz go (default: $OUT
#                    when set, as on the lent GPU machine, else ./gpu-check-out)
#   NN_CHECK_BUDGET  seconds for the whole check (default 420: it ends within 8 minutes, leaving
#                    time for a second run in 15 minutes of GPU time); compute-sanitizer gets what
#                    the other steps leave
#   NN_BENCH_BATCHES minibatches per benchmark epoch (default 50; nn times 3 epochs after a warm-up
#                    one, NN_BENCH_EPOCHS; PyTorch times as many minibatches)
#   NN_CHECK_STEPS   which steps, comma-separated (default
#                    tests,nccl,train,paths,mpi,python,cnn,bench,sampled,sanitizer;
#                    the library check always runs): a second run on the same lease can redo
#                    only what failed
#   NN_SANITIZER_FILTER  GoogleTest filter for compute-sanitizer (default: a subset that ends in
#                    about 10 s under memcheck; racecheck leaves out the million-column top-K)
#   NN_DEVICE        CUDA device index (default 0)
#   NN_CUDA_LIB_PATH extra folders (colon-separated) to search for the CUDA libraries
#   NN_BUILD_DIR     build directory without --bundle (default build-gpu); NN_CUDA_ARCH (default 90)
# Exit status: 0 when every step passed, 1 otherwise (results.tsv says which: PASS, FAIL, NO-DEVICE
# when a step found no usable GPU, NOT-RUN when the time budget or a missing tool stopped it).
set -uo pipefail
script=$(readlink -f "$0")
root=$(cd "$(dirname "$script")/.." && pwd)
start_time=$(date +%s)
budget=${NN_CHECK_BUDGET:-420}
batches=${NN_BENCH_BATCHES:-50}
bench_epochs=${NN_BENCH_EPOCHS:-3}
device=${NN_DEVICE:-0}
steps=${NN_CHECK_STEPS:-tests,nccl,train,paths,mpi,python,cnn,bench,sampled,sanitizer}
want() { [[ ",$steps," == *",$1,"* ]]; }
outdir=$(realpath -m "${NN_CHECK_OUT:-${OUT:-$PWD/gpu-check-out}}")
mkdir -p "$outdir"
work=$(mktemp -d)
logs=$work/logs
mkdir -p "$logs"
trap 'rm -rf "$work"' EXIT
report=$outdir/report.md
results=$outdir/results.tsv
status=0

bundle=""
case "${1:-}" in
  --bundle) bundle=$(realpath -m "${2:?--bundle needs the archive}") ;;
  --in-bundle) bundle_dir=$(realpath "${2:?}") ;;
  "") ;;
  -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

say() { printf '%s\n' "$*" >> "$report"; printf '%s\n' "$*"; }
block() { { printf '\n```\n'; cat; printf '```\n\n'; } >> "$report"; }
elapsed() { echo $(($(date +%s) - start_time)); }
left() { echo $((budget - $(elapsed))); }
# result STEP STATUS NOTE: one row of results.tsv and a line of the report.
result() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(elapsed)" "$3" >> "$results"
  say "- **$1: $2** ${3:+($3)}"
  [ "$2" = PASS ] || status=1
}
# run_for SECONDS LOG COMMAND...: runs with a time limit (killed after it), output to LOG.
run_for() {
  local limit=$1 log=$2
  shift 2
  [ "$limit" -gt 0 ] || { echo "not run: time budget spent" > "$log"; return 124; }
  timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
}
# gtest_status LOG RC: PASS, FAIL or NO-DEVICE from a GoogleTest run's output (no colour).
gtest_status() {
  local log=$1 rc=$2
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL"; return; fi
  if grep -q "^\[  FAILED  \]" "$log" || [ "$rc" != 0 ]; then echo FAIL; return; fi
  local ran skipped passed
  ran=$(grep -o '^\[==========\] [0-9]* tests\? from' "$log" | tail -1 | grep -o '[0-9]*' | head -1)
  skipped=$(grep -o '^\[  SKIPPED \] [0-9]* test' "$log" | grep -o '[0-9]*' | head -1)
  passed=$(grep -o '^\[  PASSED  \] [0-9]* test' "$log" | grep -o '[0-9]*' | head -1)
  # NO-DEVICE: nothing passed, and the skips say there was no device.
  if [ "${passed:-0}" = 0 ] && [ "${skipped:-0}" -gt 0 ] &&
     grep -q "no CUDA device\|no usable CUDA device" "$log"; then
    echo NO-DEVICE
  elif [ -z "$ran" ]; then
    echo FAIL  # it never reached the end of its run
  else
    echo PASS
  fi
}
# A step that found no device says so in its log; that is NO-DEVICE, not a failure of the code.
tool_status() { if [ "$2" = 0 ]; then echo PASS; elif grep -q "no usable CUDA device\|no CUDA device" "$1"; then echo NO-DEVICE; else echo FAIL; fi; }
gtest_summary() { grep -E "^\[==========\]|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]|^\[  FAILED  \]" "$1" | head -${2:-20}; }

# ---- 0. where the binaries come from ---------------------------------------------------------------
if [ -n "$bundle" ]; then
  # Unpack and hand over to the copy of this script inside the archive (what was packed with the
  # binaries is what runs).
  [ -f "$bundle" ] || { echo "gpu-check: $bundle: no such archive" >&2; exit 2; }
  unpacked=$(mktemp -d)
  tar -C "$unpacked" -xJf "$bundle" || { echo "gpu-check: cannot unpack $bundle" >&2; exit 2; }
  NN_CHECK_OUT=$outdir bash "$unpacked/nn-gpu-bundle/scripts/gpu-check.sh" --in-bundle \
    "$unpacked/nn-gpu-bundle"
  rc=$?
  rm -rf "$unpacked"
  exit $rc
fi

: > "$report"
printf 'step\tstatus\tseconds\tnote\n' > "$results"
say "# GPU check ($(date -u '+%Y-%m-%d %H:%M UTC'))"
say ""

if [ -n "${bundle_dir:-}" ]; then
  bin=$bundle_dir/bin
  tools=$bin
  check_dir=$bundle_dir/scripts
  peer=$check_dir/bench_peer_torch.py
  commit=$(sed -n 's/^commit=//p' "$bundle_dir/BUNDLE")
  cnn_config=$bundle_dir/configs/image-cnn-cifar10
  say "Bundle: $(tr '\n' ';' < "$bundle_dir/BUNDLE" | sed 's/;$//; s/;/; /g')"
else
  build=$(realpath -m "${NN_BUILD_DIR:-$root/build-gpu}")
  check_dir=$root/scripts
  commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
  say "Commit: $(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown); build $build"
  if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNN_ENABLE_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="${NN_CUDA_ARCH:-90}" > "$logs/configure.log" 2>&1 &&
     grep -q "nn: CUDA backend ON" "$logs/configure.log"; then
    targets=(nn_cuda nn_cuda_tests nn_backend_tests nn_predict_tests nn-train nn-generate
             nn-predict nn-encode nn-serve nn-bench-autoencoder nn-bench-serve-load nn-bench-cnn)
    grep -q "nn: NCCL communicator ON" "$logs/configure.log" && targets+=(nn_nccl_tests)
    if cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$logs/build.log" 2>&1; then
      result build PASS ""
    else
      tail -40 "$logs/build.log" | block
      result build FAIL "see logs/build.log"
    fi
  else
    tail -30 "$logs/configure.log" | block
    result build FAIL "configure failed or found no nvcc"
  fi
  mkdir -p "$work/bin"
  for f in "$build"/tests/nn_{cuda,backend,predict,nccl}_tests "$build"/src/tools/nn-{train,generate,predict,encode,serve} \
           "$build"/bench/nn-bench-{autoencoder,serve-load,cnn}; do
    [ -x "$f" ] && ln -s "$f" "$work/bin/"
  done
  bin=$work/bin
  tools=$bin
  peer=$check_dir/bench_peer_torch.py
  cnn_config=$root/configs/image-cnn-cifar10
fi

# ---- 1. device, driver and the CUDA libraries -------------------------------------------------------
say ""
say "## 1. Device, driver and libraries"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 ||
    echo "(no nvidia-smi)"
  uname -srm; } | block
# The card's short name for file names and JSON (docs/gpu-results): "NVIDIA H200" -> h200.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader -i "$device" 2> /dev/null | head -1 |
       tr 'A-Z' 'a-z' | sed 's/^nvidia //; s/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
card=${card:-no-gpu}
printf '%s\n' "$card" > "$outdir/card"
printf '%s\n' "$commit" > "$outdir/commit"
# The CUDA libraries the binaries name (cuBLAS, cuRAND, NCCL; cuDNN is loaded at run time): from
# the loader's paths, the toolkit's folders, or the lib folders of NVIDIA's Python wheels.
needed=(libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libnccl.so.2 libcudnn.so.9)
candidates=()
IFS=: read -r -a extra <<< "${NN_CUDA_LIB_PATH:-}"
candidates+=("${extra[@]}")
for d in /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/x86_64-linux/lib; do
  [ -d "$d" ] && candidates+=("$d")
done
for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  command -v "$py" > /dev/null 2>&1 || continue
  while IFS= read -r site; do
    for d in "$site"/nvidia/*/lib; do [ -d "$d" ] && candidates+=("$d"); done
  done < <("$py" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2> /dev/null)
done
libpath=()
for lib in "${needed[@]}"; do
  ldconfig -p 2> /dev/null | grep " $lib " > /dev/null && continue
  for d in "${candidates[@]}"; do
    if [ -e "$d/$lib" ]; then
      [[ " ${libpath[*]} " == *" $d "* ]] || libpath+=("$d")
      break
    fi
  done
done
if [ ${#libpath[@]} -gt 0 ]; then
  export LD_LIBRARY_PATH=$(IFS=:; echo "${libpath[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# cuDNN's own path for the backend's dlopen (NN_CUDNN_LIBRARY), wherever it was found.
for d in "${libpath[@]}"; do
  [ -e "$d/libcudnn.so.9" ] && [ -z "${NN_CUDNN_LIBRARY:-}" ] && export NN_CUDNN_LIBRARY=$d/libcudnn.so.9
done
say "library path added: ${LD_LIBRARY_PATH:-(none)}"
missing_report=""
# The tools open the CUDA backend at run time (libnn_cuda.so beside them, in ../lib, or in the
# build tree): it and its libraries must load too.
cuda_module=$bin/../lib/libnn_cuda.so
[ -f "$cuda_module" ] || cuda_module=${build:-}/lib/libnn_cuda.so
if [ -f "$cuda_module" ]; then
  export NN_CUDA_MODULE=$(realpath "$cuda_module")
else
  missing_report+="libnn_cuda.so: not built"$'\n'
fi
for f in "$bin"/* ${NN_CUDA_MODULE:+"$NN_CUDA_MODULE"}; do
  m=$(ldd "$f" 2>&1 | awk '/not found/ { print $1 }' | tr '\n' ' ')
  [ -n "$m" ] && missing_report+="$(basename "$f"): $m"$'\n'
done
absent=""
for lib in "${needed[@]}"; do
  ldconfig -p 2> /dev/null | grep " $lib " > /dev/null && continue
  found=0
  for d in "${libpath[@]}"; do [ -e "$d/$lib" ] && found=1; done
  [ $found = 1 ] || absent+="$lib "
done
if [ -z "$missing_report" ]; then
  result libraries PASS "every binary loads${absent:+; not found: $absent}"
else
  printf '%s' "$missing_report" | block
  result libraries FAIL "missing: $(printf '%s' "$missing_report" | tr '\n' ';')"
fi

# ---- 2. CUDA-labelled tests ------------------------------------------------------------------------
if want tests; then
say """"
say "## 2. CUDA tests: CUDA backend against the CPU backend"
run_for "$(( $(left) < 120 ? $(left) : 120 ))" "$logs/cuda-tests.log" "$bin/nn_cuda_tests" --gtest_color=no
rc=$?
gtest_summary "$logs/cuda-tests.log" | block
result cuda_tests "$(gtest_status "$logs/cuda-tests.log" $rc)" "nn_cuda_tests"
# Every test of tests/unit/backend on the CUDA backend, with the references and tolerances the CPU
# meets (four SMCE-on-SoftMax instances skip by design on every backend).
run_for "$(( $(left) < 150 ? $(left) : 150 ))" "$logs/backend-cuda.log" "$bin/nn_backend_tests" \
  --gtest_color=no --gtest_filter='*/cuda*'
rc=$?
gtest_summary "$logs/backend-cuda.log" | block
result backend_cuda_instances "$(gtest_status "$logs/backend-cuda.log" $rc)" "nn_backend_tests */cuda*"
# The host tests of the kernels' arithmetic, the device probe and cuDNN's shape derivation.
run_for 60 "$logs/host.log" "$bin/nn_backend_tests" --gtest_color=no \
  --gtest_filter='HostKernelMath.*:CudaProbe.*:MakeBackend.*:CudnnHost.*'
rc=$?
gtest_summary "$logs/host.log" 5 | block
result host_kernel_math "$(gtest_status "$logs/host.log" $rc)" "HostKernelMath, CudaProbe, MakeBackend, CudnnHost"
fi

# ---- 3. NCCL --------------------------------------------------------------------------------------
if want nccl; then
say ""
say "## 3. NCCL communicator, one rank (two ranks need two GPUs)"
if [ -x "$bin/nn_nccl_tests" ]; then
  run_for "$(( $(left) < 90 ? $(left) : 90 ))" "$logs/nccl.log" "$bin/nn_nccl_tests" --gtest_color=no
  rc=$?
  gtest_summary "$logs/nccl.log" | block
  result nccl_tests "$(gtest_status "$logs/nccl.log" $rc)" "nn_nccl_tests, 1 rank"
else
  result nccl_tests NOT-RUN "no nn_nccl_tests (built without NCCL)"
fi
fi

# make_data: the recommender data of steps 4 and 4c, once (3,000 users of 7 tastes, 60 items per
# taste, 25 liked items plus 5 random ones each) and the network trained on it.
data=$work/data
make_data() {
  [ -f "$data/net.json" ] && return 0
  mkdir -p "$data"
  (
    cd "$data" || exit 1
    # 1,003 items, widths not rounded up (--align 1): not a multiple of 8, so the CUDA runs
    # hold the output layer's rows padded (to 1,008 floats; docs/performance.md, "Padded rows")
    # and the CPU runs do not.
    awk 'BEGIN { srand(11); for (u = 0; u < 3000; ++u) { t = u % 7; delete seen; line = "";
           for (k = 0; k < 30; ++k) { i = (k < 25) ? t * 60 + int(rand() * 60) : int(rand() * 1003);
             if (!(i in seen)) { seen[i] = 1; line = line (line == "" ? "" : ":") "i" i } }
           print "u" u "\t" line } }' > ratings.txt
    "$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c \
      --align 1 &&
      "$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx \
        --align 1
  ) > "$logs/generate.log" 2>&1 || { tail -5 "$logs/generate.log" | block; }
  cat > "$data/net.json" << 'JSON'
{ "Name": "gpu-check", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "H1", "Kind": "Hidden", "N": 256, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "H2", "Kind": "Hidden", "N": 128, "Activation": "RectifiedLinear" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
  # Without dropout, for the gradient check and the Python module's comparison.
  sed 's/, "pDropout": 0.1//' "$data/net.json" > "$data/net-check.json"
}
# train_net NAME BACKEND [FLAGS...]: 5 epochs of Adam on that data, the same seed (net-NAME.nc,
# net-NAME.epochs.jsonl, logs/train-NAME.log); returns nn-train's status.
train_net() {
  local name=$1 be=$2
  shift 2
  (cd "$data" && run_for 150 "$logs/train-$name.log" "$tools/nn-train" -c net.json -i input.nc \
    -o output.nc -n "net-$name.nc" -b 128 -e 5 --optimizer Adam --alpha 0.002 --seed 7 \
    --checkpoint-interval 0 --backend "$be" --device "$device" "$@")
}

# ---- 4. gradient check, training and prediction: cuda against cpu ---------------------------------
if want train; then
say """"
say "## 4. Gradient check, training and prediction: --backend cuda against --backend cpu"
make_data
(cd "$data" && run_for 120 "$logs/validate-cuda.log" "$tools/nn-train" --validate -c net-check.json \
  -i input.nc -o output.nc -b 32 --backend cuda --device "$device")
rc=$?
grep -E "PASS|FAIL|passed|error" "$logs/validate-cuda.log" | tail -8 | block
result gradient_check_cuda "$(tool_status "$logs/validate-cuda.log" $rc)" "nn-train --validate --backend cuda"
for be in cpu cuda; do
  train_net "$be" "$be"
  eval "rc_$be=$?"
done
if [ "$rc_cpu" = 0 ] && [ "$rc_cuda" = 0 ]; then
  python3 - "$data/net-cpu.epochs.jsonl" "$data/net-cuda.epochs.jsonl" > "$logs/compare.txt" << 'PY'
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gpu = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = len(cpu) == len(gpu) and len(cpu) > 0
print(f"{'epoch':>5} {'loss cpu':>14} {'loss cuda':>14} {'rel diff':>10} {'s/epoch cpu':>12} {'s/epoch cuda':>12}")
for c, g in zip(cpu, gpu):
    rel = abs(c["loss"] - g["loss"]) / max(1e-12, abs(c["loss"]))
    # Same data order and dropout masks (counter-based RNG): only summation order differs.
    ok = ok and rel < 1e-3
    print(f"{c['epoch']:>5} {c['loss']:>14.6f} {g['loss']:>14.6f} {rel:>10.2e} {c['seconds']:>12.3f} {g['seconds']:>12.3f}")
print("MATCH" if ok else "MISMATCH (tolerance 1e-3 relative per epoch)")
sys.exit(0 if ok else 1)
PY
  rc=$?
  block < "$logs/compare.txt"
  result training_cuda_vs_cpu "$([ $rc = 0 ] && echo PASS || echo FAIL)" "per-epoch loss within 1e-3"
else
  tail -3 "$logs/train-cuda.log" | block
  result training_cuda_vs_cpu "$(tool_status "$logs/train-cuda.log" "$rc_cuda")" "nn-train exit cpu $rc_cpu, cuda $rc_cuda"
fi
# Filtered top-K on the device: the CUDA-trained network's recommendations scored on both backends.
if [ "$rc_cuda" = 0 ]; then
  for be in cpu cuda; do
    (cd "$data" && run_for 60 "$logs/predict-$be.log" "$tools/nn-predict" -n net-cuda.nc \
      -r ratings.txt -i features.idx -o features.idx -f ratings.txt -k 10 -s "recs-$be" \
      --backend "$be" --device "$device")
    eval "rc_p_$be=$?"
  done
  if [ "$rc_p_cpu" = 0 ] && [ "$rc_p_cuda" = 0 ]; then
    python3 - "$data/recs-cpu" "$data/recs-cuda" > "$logs/compare-recs.txt" << 'PY'
import sys
a = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
b = [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
same_items = sum(1 for x, y in zip(a, b) if [e.split(",")[0] for e in x[1].split(":") if e] ==
                 [e.split(",")[0] for e in y[1].split(":") if e])
print(f"{len(a)} users; identical top-10 item lists for {same_items}")
# Scores differ in the last digits (summation order), which may swap near-ties: allow 2%.
sys.exit(0 if len(a) == len(b) and same_items >= 0.98 * len(a) else 1)
PY
    rc=$?
    block < "$logs/compare-recs.txt"
    result prediction_cuda_vs_cpu "$([ $rc = 0 ] && echo PASS || echo FAIL)" "filtered top-10 lists"
  else
    result prediction_cuda_vs_cpu "$(tool_status "$logs/predict-cuda.log" "$rc_p_cuda")" "nn-predict exit cpu $rc_p_cpu, cuda $rc_p_cuda"
  fi
else
  result prediction_cuda_vs_cpu NOT-RUN "no CUDA-trained network"
fi
fi

# ---- 4c. every other CUDA path at tool level ------------------------------------------------------
# compare_epochs A.jsonl B.jsonl TOL1 TOLN: per-epoch losses of two runs; epoch 1 within TOL1
# relative, later epochs within TOLN of epoch 1's loss (training drifts apart chaotically).
compare_epochs() {
  python3 - "$@" << 'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
b = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
tol1, toln = float(sys.argv[3]), float(sys.argv[4])
ok = len(a) == len(b) > 0
print(f"{'epoch':>5} {'loss A':>14} {'loss B':>14} {'rel diff':>10} {'s A':>8} {'s B':>8}")
for i, (x, y) in enumerate(zip(a, b)):
    rel = abs(x["loss"] - y["loss"]) / max(1e-12, abs(x["loss"]))
    ok = ok and (rel < tol1 if i == 0 else abs(x["loss"] - y["loss"]) < toln * abs(a[0]["loss"]))
    print(f"{x['epoch']:>5} {x['loss']:>14.6f} {y['loss']:>14.6f} {rel:>10.2e} {x['seconds']:>8.3f} {y['seconds']:>8.3f}")
print("MATCH" if ok else f"MISMATCH (epoch 1 within {tol1:g} relative, then within {toln:g} of epoch 1's loss)")
sys.exit(0 if ok else 1)
PY
}
# compare_recs A B MIN_OVERLAP: mean share of each user's top-10 items both lists hold.
compare_recs() {
  python3 - "$@" << 'PY'
import sys
def lists(path):
    return {l.split("\t")[0]: [e.split(",")[0] for e in l.rstrip("\n").split("\t")[1].split(":") if e]
            for l in open(path) if "\t" in l}
a, b = lists(sys.argv[1]), lists(sys.argv[2])
shared = [len(set(a[u]) & set(b.get(u, []))) / max(1, len(a[u])) for u in a]
mean = sum(shared) / max(1, len(shared))
print(f"{len(a)} users; mean top-10 overlap {mean:.4f} (at least {float(sys.argv[3]):g} wanted)")
sys.exit(0 if len(a) == len(b) > 0 and mean >= float(sys.argv[3]) else 1)
PY
}
# against_plain_cuda RC STEP NAME TOL1 TOLN NOTE [LINE]: the per-epoch losses of train_net NAME
# (which exited with RC) against the plain CUDA run's (compare_epochs TOL1 TOLN); LINE: a line the
# run's log must hold (else the step fails).
against_plain_cuda() {
  local rc=$1 step=$2 name=$3 tol1=$4 toln=$5 note=$6 line=${7:-}
  if [ "$rc" = 0 ] && { [ -z "$line" ] || grep -q "$line" "$logs/train-$name.log"; }; then
    verdict "$step" "$note" "$logs/compare-$name.txt" \
      compare_epochs "$data/net-cuda.epochs.jsonl" "$data/net-$name.epochs.jsonl" "$tol1" "$toln"
  else
    tail -3 "$logs/train-$name.log" | block
    result "$step" "$(tool_status "$logs/train-$name.log" "$rc")" "nn-train exit $rc${line:+ (the log must say \"$line\")}"
  fi
}
# verdict STEP NOTE LOG COMMAND...: runs a comparison into LOG, puts LOG in the report and
# records PASS when it exited 0, FAIL otherwise.
verdict() {
  local step=$1 note=$2 log=$3
  shift 3
  "$@" > "$log"
  local rc=$?
  block < "$log"
  result "$step" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$note"
}
if want paths; then
say ""
say "## 4c. BF16, Variational, streamed data, blocked top-K and serving on CUDA"
make_data
[ -f "$data/net-cuda.epochs.jsonl" ] || train_net cuda cuda
# BF16 training against FP32 training on the same device (BF16 products round both operands to
# 8 bits of mantissa: the losses move by about a percent, docs/performance.md).
if [ "$(left)" -gt 40 ]; then
  train_net cuda-bf16 cuda --precision bf16
  rc=$?
  if [ $rc = 0 ] && [ -f "$data/net-cuda.epochs.jsonl" ]; then
    verdict bf16_training_cuda "BF16 against FP32 on CUDA: epoch 1 within 2%, later within 3% of epoch 1's loss" "$logs/compare-bf16.txt" \
      compare_epochs "$data/net-cuda.epochs.jsonl" "$data/net-cuda-bf16.epochs.jsonl" 0.02 0.03
  else
    tail -3 "$logs/train-cuda-bf16.log" | block
    result bf16_training_cuda "$(tool_status "$logs/train-cuda-bf16.log" $rc)" "nn-train --precision bf16 exit $rc"
  fi
  # BF16 scoring of the FP32 network against FP32 scoring, both on CUDA.
  if [ -f "$data/net-cuda.nc" ]; then
    for p in fp32 bf16; do
      (cd "$data" && run_for 60 "$logs/predict-$p.log" "$tools/nn-predict" -n net-cuda.nc \
        -r ratings.txt -i features.idx -o features.idx -f ratings.txt -k 10 -s "recs-$p" \
        --backend cuda --device "$device" --precision "$p")
      eval "rc_$p=$?"
    done
    if [ "$rc_fp32" = 0 ] && [ "$rc_bf16" = 0 ]; then
      verdict bf16_prediction_cuda "top-10 overlap with FP32 scoring >= 0.9" "$logs/compare-recs-bf16.txt" \
        compare_recs "$data/recs-fp32" "$data/recs-bf16" 0.9
    else
      result bf16_prediction_cuda "$(tool_status "$logs/predict-bf16.log" "$rc_bf16")" "nn-predict exit fp32 $rc_fp32, bf16 $rc_bf16"
    fi
  else
    result bf16_prediction_cuda NOT-RUN "no CUDA-trained network"
  fi
else
  result bf16_training_cuda NOT-RUN "time budget spent"
fi
# Variational training (configs/recommender-mult-vae): CUDA against CPU, the same noise
# (counter-based: both backends draw the same Gaussian for an element).
if [ "$(left)" -gt 40 ] && [ -f "$check_dir/../configs/recommender-mult-vae/network.json" ]; then
  cp "$check_dir/../configs/recommender-mult-vae/network.json" "$data/vae.json"
  for be in cpu cuda; do
    (cd "$data" && run_for 120 "$logs/vae-$be.log" "$tools/nn-train" -c vae.json -i input.nc \
      -o output.nc -n "vae-$be.nc" -b 128 -e 3 --optimizer Adam --alpha 0.001 --seed 7 \
      --checkpoint-interval 0 --backend "$be" --device "$device")
    eval "rc_$be=$?"
  done
  if [ "$rc_cpu" = 0 ] && [ "$rc_cuda" = 0 ]; then
    verdict variational_cuda_vs_cpu "Mult-VAE, 3 epochs: epoch 1 within 1e-3, then within 1e-2 of epoch 1's loss" "$logs/compare-vae.txt" \
      compare_epochs "$data/vae-cpu.epochs.jsonl" "$data/vae-cuda.epochs.jsonl" 1e-3 1e-2
  else
    tail -3 "$logs/vae-cuda.log" | block
    result variational_cuda_vs_cpu "$(tool_status "$logs/vae-cuda.log" "$rc_cuda")" "nn-train exit cpu $rc_cpu, cuda $rc_cuda"
  fi
fi
# Streamed data: one window holds the whole file, so --stream trains exactly the in-memory run.
if [ "$(left)" -gt 30 ] && [ -f "$data/net-cuda.epochs.jsonl" ]; then
  train_net cuda-stream cuda --stream
  against_plain_cuda $? stream_cuda cuda-stream 1e-6 1e-6 "--stream against in memory on CUDA: equal losses (1e-6)"
else
  result stream_cuda NOT-RUN "no in-memory CUDA run to compare with, or no time left"
fi
# CUDA Graphs (NN_CUDA_GRAPHS=1: every step after the first of its shape recorded and launched as
# graphs) against the same run launched call by call: the same kernels with the same arguments,
# so the losses agree (cuBLAS then works in a workspace of its own, which may change its
# kernels' summation order: 1e-5). The log must say that steps ran as graphs.
if [ "$(left)" -gt 30 ] && [ -f "$data/net-cuda.epochs.jsonl" ]; then
  (export NN_CUDA_GRAPHS=1; train_net cuda-graphs cuda)
  rc=$?
  grep "CUDA graphs" "$logs/train-cuda-graphs.log" | block
  against_plain_cuda $rc graphs_cuda cuda-graphs 1e-5 1e-4 "NN_CUDA_GRAPHS=1 against call by call on CUDA: epoch 1 within 1e-5, later within 1e-4 of epoch 1's loss" \
    "steps ran as CUDA graphs"
else
  result graphs_cuda NOT-RUN "no call-by-call CUDA run to compare with, or no time left"
fi
# Padded rows: the output layer's 1,003 units held in rows of 1,008 floats (the CUDA default)
# against rows of 1,003 (NN_CUDA_ROW_ALIGN=1). The same sums, but cuBLAS may pick other kernels
# for aligned rows, with another summation order: epoch 1 within 1e-5, later within 1e-4.
if [ "$(left)" -gt 30 ] && [ -f "$data/net-cuda.epochs.jsonl" ]; then
  (export NN_CUDA_ROW_ALIGN=1; train_net cuda-unpadded cuda)
  rc=$?
  grep "rows padded" "$logs/train-cuda.log" | block
  if ! grep -q "rows padded" "$logs/train-cuda.log"; then
    result padded_rows_cuda FAIL "the default CUDA run did not pad the output layer's rows"
  elif [ $rc = 0 ] && grep -q "rows padded" "$logs/train-cuda-unpadded.log"; then
    result padded_rows_cuda FAIL "NN_CUDA_ROW_ALIGN=1 still padded the rows"
  else
    against_plain_cuda $rc padded_rows_cuda cuda-unpadded 1e-5 1e-4 "rows padded (the default) against unpadded (NN_CUDA_ROW_ALIGN=1) on CUDA: epoch 1 within 1e-5, later within 1e-4 of epoch 1's loss"
  fi
else
  result padded_rows_cuda NOT-RUN "no CUDA run to compare with, or no time left"
fi
# Blocked top-K and the predictor on CUDA (nn_predict_tests' CUDA instances; column slices are
# compared within 1e-5, cuBLAS promising no bits there).
if [ -x "$bin/nn_predict_tests" ]; then
  run_for "$(( $(left) < 90 ? $(left) : 90 ))" "$logs/predict-tests.log" "$bin/nn_predict_tests" \
    --gtest_color=no --gtest_filter='*/cuda*'
  rc=$?
  gtest_summary "$logs/predict-tests.log" | block
  result predict_tests_cuda "$(gtest_status "$logs/predict-tests.log" $rc)" "nn_predict_tests */cuda*"
fi
# nn-serve --backend cuda, 8 evaluators, under 32 concurrent clients: every answer equal to a
# CPU server's answer to the same request sent alone (a race between requests shows as answers
# of another user or errors), then the throughput of nn-bench-serve-load.
if [ -x "$bin/nn-serve" ] && [ -f "$data/net-cuda.nc" ] && [ "$(left)" -gt 40 ]; then
  head -400 "$data/ratings.txt" | python3 -c 'import json, sys
for line in sys.stdin:
    user, items = line.rstrip("\n").split("\t")
    print(json.dumps({"items": [e.split(",")[0] for e in items.split(":")][:20], "k": 10}))' > "$data/bodies.jsonl"
  serve_pids=()
  start_serve() {  # start_serve NAME BACKEND THREADS: sets port_NAME
    (cd "$data" && exec "$tools/nn-serve" -q --port 0 -n net-cuda.nc -i features.idx -o features.idx \
      --backend "$2" --device "$device" --threads "$3") > "$logs/serve-$1.log" 2>&1 &
    serve_pids+=($!)
    local p=""
    for _ in $(seq 300); do
      p=$(grep -o "127.0.0.1:[0-9]*" "$logs/serve-$1.log" 2> /dev/null | head -1 | cut -d: -f2)
      [ -n "$p" ] && break
      kill -0 "${serve_pids[-1]}" 2> /dev/null || break
      sleep 0.1
    done
    eval "port_$1=$p"
  }
  start_serve ref cpu 2
  start_serve cuda cuda 8
  if [ -n "$port_ref" ] && [ -n "$port_cuda" ]; then
    run_for 120 "$logs/serve-check.txt" python3 "$check_dir/gpu_serve_check.py" "$port_ref" \
      "$port_cuda" "$data/bodies.jsonl" --clients 32 --rounds 3
    rc=$?
    if [ -x "$bin/nn-bench-serve-load" ]; then
      timeout 60 "$bin/nn-bench-serve-load" --port "$port_cuda" --bodies "$data/bodies.jsonl" \
        --clients 32 --requests 20000 --seconds 10 >> "$logs/serve-check.txt" 2>&1
    fi
    block < "$logs/serve-check.txt"
    result serve_cuda_32_clients "$([ $rc = 0 ] && echo PASS || echo FAIL)" "32 concurrent clients, answers equal to the CPU server's"
  else
    tail -3 "$logs/serve-cuda.log" | block
    result serve_cuda_32_clients "$(tool_status "$logs/serve-cuda.log" 1)" "nn-serve did not start (cpu port '${port_ref}', cuda port '${port_cuda}')"
  fi
  for pid in "${serve_pids[@]}"; do kill -TERM "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; done
else
  result serve_cuda_32_clients NOT-RUN "no nn-serve, no CUDA-trained network, or no time left"
fi
fi

# ---- 4d. mpirun: two data-parallel ranks against one process ---------------------------------------
if want mpi; then
say ""
say "## 4d. mpirun -np 2: two data-parallel ranks against one process (CPU, then both ranks on the GPU)"
make_data
# One host, no ssh: the launcher must not look for a remote shell (local ranks never use it).
mpirun_bin="" mpi_env=(OMPI_MCA_plm_rsh_agent=false)
if [ -n "${bundle_dir:-}" ] && [ -x "$bin/mpirun" ]; then
  # The bundle's relocated Open MPI: its install paths point into the bundle.
  mpirun_bin=$bin/mpirun
  mpi_env=(OPAL_PREFIX="$bundle_dir" OPAL_EXEC_PREFIX="$bundle_dir" OPAL_BINDIR="$bin"
           OPAL_LIBDIR="$bundle_dir/lib" OPAL_PKGLIBDIR="$bundle_dir/lib/openmpi3"
           OPAL_DATAROOTDIR="$bundle_dir/share" OPAL_DATADIR="$bundle_dir/share"
           OPAL_PKGDATADIR="$bundle_dir/share/openmpi" OPAL_SYSCONFDIR="$bundle_dir/etc"
           PMIX_PREFIX="$bundle_dir" PMIX_LIBDIR="$bundle_dir/lib" PMIX_PKGLIBDIR="$bundle_dir/lib/pmix"
           PMIX_PKGDATADIR="$bundle_dir/share/pmix" OMPI_MCA_mca_base_component_show_load_errors=0
           OMPI_MCA_plm_rsh_agent=false)
elif command -v mpirun > /dev/null 2>&1; then
  mpirun_bin=$(command -v mpirun)
fi
if [ -z "$mpirun_bin" ]; then
  result mpi_np2_cpu NOT-RUN "no mpirun in the bundle or on PATH"
  result mpi_np2_cuda NOT-RUN "no mpirun in the bundle or on PATH"
else
  # One process of each backend first, when step 4 did not train it.
  for be in cpu cuda; do
    [ -f "$data/net-$be.epochs.jsonl" ] || train_net "$be" "$be"
  done
  for be in cpu cuda; do
    if [ "$(left)" -lt 30 ]; then result "mpi_np2_$be" NOT-RUN "time budget spent"; continue; fi
    (cd "$data" && env "${mpi_env[@]}" timeout --kill-after=10 150 "$mpirun_bin" --allow-run-as-root \
      --oversubscribe -np 2 --mca btl self,vader,tcp "$tools/nn-train" -c net.json -i input.nc \
      -o output.nc -n "net-mpi-$be.nc" -b 128 -e 5 --optimizer Adam --alpha 0.002 --seed 7 \
      --checkpoint-interval 0 --backend "$be" --device "$device") > "$logs/mpi-$be.log" 2>&1
    rc=$?
    grep -m 4 "rank [01] on\|communicator\|error" "$logs/mpi-$be.log" | block
    if [ $rc = 0 ] && [ -f "$data/net-$be.epochs.jsonl" ]; then
      # Data parallel sums the two halves' gradients: one process's losses to rounding.
      verdict "mpi_np2_$be" "mpirun -np 2 --backend $be: per-epoch losses within 1e-4 of one process's" "$logs/compare-mpi-$be.txt" \
        compare_epochs "$data/net-$be.epochs.jsonl" "$data/net-mpi-$be.epochs.jsonl" 1e-4 1e-4
    else
      tail -5 "$logs/mpi-$be.log" | block
      result "mpi_np2_$be" "$(tool_status "$logs/mpi-$be.log" $rc)" "mpirun -np 2 nn-train --backend $be exit $rc"
    fi
  done
fi
fi

# ---- 4f. the Python module on CUDA -------------------------------------------------------------------
if want python; then
say ""
say "## 4f. The Python module (nnsuite), compiled here for this machine's Python, on CUDA against the CPU"
make_data
py="" cxx=$(command -v g++ || command -v c++ || true)
for candidate in python3 /opt/torch/.venv/bin/python3; do
  if command -v "$candidate" > /dev/null 2>&1 &&
     "$candidate" -c 'import pybind11, numpy, scipy' > /dev/null 2>&1; then
    py=$candidate
    break
  fi
done
library=$(ls "${bundle_dir:-/nonexistent}"/lib/libnn.so.* 2> /dev/null | head -1)
if [ -z "$py" ] || [ -z "$cxx" ] || [ -z "$library" ] || [ ! -d "$bundle_dir/python/src" ]; then
  result python_cuda NOT-RUN "needs the bundle's libnn.so and python/src, a C++ compiler (${cxx:-none}) and a Python with pybind11, NumPy and SciPy (${py:-none})"
else
  # The module uses include/nn/ alone: compiled against pybind11 and this Python's headers,
  # linked to the bundle's libnn.so (its own C++ runtime linked in, so the system's newer one and
  # the bundle's may both be loaded).
  mod=$work/python/nnsuite
  mkdir -p "$mod"
  cp "$bundle_dir"/python/nnsuite/*.py "$mod/"
  ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  run_for 240 "$logs/python-build.log" "$cxx" -O1 -std=c++17 -shared -fPIC \
    $("$py" -m pybind11 --includes) -I"$bundle_dir/include" "$bundle_dir/python/src/module.cpp" \
    "$bundle_dir/python/src/arrays.cpp" "$library" -Wl,-rpath,"$bundle_dir/lib" \
    -static-libstdc++ -static-libgcc -o "$mod/_core$ext"
  rc=$?
  if [ $rc != 0 ]; then
    tail -15 "$logs/python-build.log" | block
    result python_cuda FAIL "the module did not compile (logs/python-build.log)"
  else
    cat > "$work/python/check.py" << 'PY'
import sys, nnsuite
data = {**nnsuite.read_datasets("input.nc"), **nnsuite.read_datasets("output.nc")}
losses = {}
for be in ("cpu", "cuda"):
    m = nnsuite.Model.from_json("net-check.json", datasets=data, seed=7, backend=be)
    t = nnsuite.Trainer(m, data, epochs=3, minibatch=128, optimizer="Adam", alpha=0.002, seed=7)
    losses[be] = [s["loss"] for s in t.run()]
    print(be, " ".join(f"{l:.6f}" for l in losses[be]), flush=True)
ok = all(abs(a - b) <= 1e-3 * abs(a) for a, b in zip(losses["cpu"], losses["cuda"]))
print("MATCH" if ok else "MISMATCH (1e-3 relative per epoch)")
sys.exit(0 if ok else 1)
PY
    (cd "$data" && PYTHONPATH=$work/python run_for 120 "$logs/python.log" "$py" "$work/python/check.py")
    rc=$?
    tail -4 "$logs/python.log" | block
    if [ $rc = 0 ]; then
      result python_cuda PASS "nnsuite Trainer, 3 epochs on CUDA and the CPU: losses within 1e-3"
    else
      result python_cuda "$(tool_status "$logs/python.log" $rc)" "the module built; the run exited $rc"
    fi
  fi
fi
fi

# ---- 4b. a convolutional network: cuda against cpu, cuDNN's algorithm settings ----------------------
if want cnn; then
say ""
say "## 4b. CIFAR-10's network (configs/image-cnn-cifar10) on generated CIFAR-format images"
cnn=$work/cnn
mkdir -p "$cnn"
images=${NN_CNN_IMAGES:-12000}
# Ten easy classes (a colour and a stripe direction each, plus noise), in CIFAR-10's binary format.
python3 - "$cnn/data_batch_1.bin" "$images" << 'PY'
import random, sys
random.seed(3)
palette = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40), (200, 40, 200),
           (40, 200, 200), (220, 120, 40), (120, 40, 220), (120, 120, 120), (230, 230, 230)]
bases = []
for k in range(10):
    planes = bytearray()
    for c in range(3):
        for y in range(32):
            for x in range(32):
                stripe = (y if k < 5 else x) // 4 % 2
                planes.append(max(0, min(255, palette[k][c] + (30 if stripe else -30))))
    bases.append(bytes(planes))
with open(sys.argv[1], "wb") as f:
    for _ in range(int(sys.argv[2])):
        k = random.randrange(10)
        img = bytearray(bases[k])
        noise = random.randbytes(3072)
        for i in random.sample(range(3072), 1500):
            img[i] = noise[i]
        f.write(bytes([k]) + bytes(img))
PY
cp "$cnn_config/network.json" "$cnn/"
"$tools/nn-encode" cifar10 -i "$cnn/data_batch_1.bin" -o "$cnn/train.nc" > "$logs/cnn-encode.log" 2>&1
cnn_rc=$?
cnn_run() {  # NAME BACKEND [ENV...]: 3 epochs of Adam, minibatch 64, the same seed
  local name=$1 be=$2
  shift 2
  printf '{ "Version": 0.9, "Network": "network.json", "Command": "Train", "RandomSeed": 12345,
    "Data": "train.nc", "TrainingParameters": { "Epochs": 3, "MiniBatch": 64, "Optimizer": "Adam",
    "Alpha": 0.001, "mu": 0.9, "mu1": 0.999, "Lambda": 0.0001, "CheckpointInterval": 0,
    "Results": "net-%s.nc" } }\n' "$name" > "$cnn/$name.cdl"
  (cd "$cnn" && env "$@" timeout --kill-after=10 120 "$tools/nn-train" "$name.cdl" --backend "$be" \
     --device "$device") > "$logs/cnn-$name.log" 2>&1
}
if [ $cnn_rc = 0 ]; then
  cnn_run cpu cpu NN_UNUSED=1; rc_cpu=$?
  cnn_run cuda cuda NN_CUDNN_ALGO=deterministic; rc_cuda=$?
  cnn_run cuda-fastest cuda NN_CUDNN_ALGO=fastest; rc_fast=$?
  python3 - "$cnn" > "$logs/cnn-compare.txt" << 'PY'
import json, os, sys
def epochs(name):
    path = os.path.join(sys.argv[1], f"net-{name}.epochs.jsonl")
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
runs = {n: epochs(n) for n in ("cpu", "cuda", "cuda-fastest")}
print(f"{'epoch':>5} {'loss cpu':>12} {'loss cuda':>12} {'rel diff':>9} {'loss fastest':>13}"
      f" {'s cpu':>7} {'s cuda':>7} {'s fastest':>9}")
# Training a convolutional network is chaotic: summation order alone (cuDNN's against oneDNN's)
# moves later epochs visibly, as two CPU convolution codes do too (nn-bench-cnn --conv gemm and
# --conv dnnl on Fashion-MNIST: 0.4294 against 0.4306 after 3 epochs). So the first epoch must
# agree within 1e-3 relative, and every epoch within 1e-2 of the first epoch's loss.
ok = len(runs["cpu"]) == len(runs["cuda"]) == 3
scale = abs(runs["cpu"][0]["loss"]) if runs["cpu"] else 0.0
for i in range(len(runs["cuda"])):
    c, g = runs["cpu"][i] if i < len(runs["cpu"]) else None, runs["cuda"][i]
    f = runs["cuda-fastest"][i] if i < len(runs["cuda-fastest"]) else None
    rel = abs(c["loss"] - g["loss"]) / max(1e-12, abs(c["loss"])) if c else float("nan")
    ok = ok and c is not None and (rel < 1e-3 if i == 0 else abs(c["loss"] - g["loss"]) < 1e-2 * scale)
    print(f"{g['epoch']:>5} {c['loss'] if c else float('nan'):>12.6f} {g['loss']:>12.6f} {rel:>9.2e}"
          f" {f['loss'] if f else float('nan'):>13.6f} {c['seconds'] if c else float('nan'):>7.2f}"
          f" {g['seconds']:>7.2f} {f['seconds'] if f else float('nan'):>9.2f}")
print("MATCH" if ok else "MISMATCH (epoch 1 within 1e-3 relative, every epoch within 1e-2 of epoch 1's loss)")
sys.exit(0 if ok else 1)
PY
  rc=$?
  block < "$logs/cnn-compare.txt"
  grep -h "cuDNN\|error" "$logs"/cnn-cuda*.log | head -5 | block
  if [ "$rc_cuda" != 0 ]; then
    result cnn_cuda_vs_cpu "$(tool_status "$logs/cnn-cuda.log" "$rc_cuda")" "nn-train exit cpu $rc_cpu, cuda $rc_cuda"
  else
    result cnn_cuda_vs_cpu "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$images images, 3 epochs: epoch 1 within 1e-3, then within 1e-2 of epoch 1's loss"
  fi
  result cnn_cuda_fastest "$(tool_status "$logs/cnn-cuda-fastest.log" "$rc_fast")" "NN_CUDNN_ALGO=fastest trains (seconds in the table)"
  # The convolutional steps recorded as CUDA graphs (cuDNN's calls inside the capture) against the
  # same run launched call by call; the log must say that steps ran as graphs.
  if [ "$rc_cuda" = 0 ] && [ "$(left)" -gt 30 ]; then
    cnn_run cuda-graphs cuda NN_CUDNN_ALGO=deterministic NN_CUDA_GRAPHS=1
    rc=$?
    if [ $rc = 0 ] && grep -q "steps ran as CUDA graphs" "$logs/cnn-cuda-graphs.log"; then
      grep "CUDA graphs" "$logs/cnn-cuda-graphs.log" | block
      verdict cnn_graphs_cuda "NN_CUDA_GRAPHS=1 against call by call: epoch 1 within 1e-4, then within 1e-2 of epoch 1's loss" "$logs/cnn-compare-graphs.txt" \
        compare_epochs "$cnn/net-cuda.epochs.jsonl" "$cnn/net-cuda-graphs.epochs.jsonl" 1e-4 1e-2
    else
      tail -3 "$logs/cnn-cuda-graphs.log" | block
      result cnn_graphs_cuda "$(tool_status "$logs/cnn-cuda-graphs.log" $rc)" "nn-train exit $rc (the log must say that steps ran as CUDA graphs)"
    fi
  fi
else
  tail -5 "$logs/cnn-encode.log" | block
  result cnn_cuda_vs_cpu FAIL "nn-encode failed"
fi
fi

# ---- 5. benchmark ---------------------------------------------------------------------------------
if want bench; then
say ""
say "## 5. MovieLens-20M-shaped autoencoder (27,278 items, ~144 non-zeros, batch 256), next to PyTorch"
say ""
say "nn: nn-train's training step (nn-bench-autoencoder: the training loop, loader overlapped), the"
say "median of $bench_epochs timed epochs of $batches minibatches after a warm-up epoch, beside its floor"
say "(the step's bytes and FLOPs over the bandwidth and gemm peak measured on this card). PyTorch:"
say "eager and torch.compile, FP32, TF32 and BF16 autocast, sparse and dense input, no read-back"
say "inside the timed steps. s/epoch: ms/batch x 541 (138,493 examples)."
bench_log=$outdir/bench.jsonl
: > "$bench_log"
torch_py=""
for candidate in python3 /opt/torch/.venv/bin/python3; do
  if command -v "$candidate" > /dev/null 2>&1 &&
     "$candidate" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
    torch_py=$candidate
    break
  fi
done
# tag: every JSON line gets the card, the commit and the date (docs/gpu-results keeps them).
tag() { sed "s/}\$/, \"card\": \"$card\", \"commit\": \"$commit\", \"date\": \"$(date -u +%F)\"}/"; }
bench_rc=0
for hidden in 128 1024x3; do
  for math in fp32 tf32 bf16; do
    [ "$(left)" -gt 45 ] || { say "(nn $hidden $math not run: time budget)"; bench_rc=124; continue; }
    precision=$([ $math = bf16 ] && echo bf16 || echo fp32)
    NN_CUDA_TF32=$([ $math = tf32 ] && echo 1 || echo 0) run_for 90 "$logs/bench-$hidden-$math.log" \
      "$bin/nn-bench-autoencoder" --hidden "$hidden" --batches "$batches" --epochs "$bench_epochs" \
      --optimizer RMSProp --precision "$precision" --backend cuda --device "$device"
    rc=$?
    if [ $rc = 0 ]; then
      grep '^{' "$logs/bench-$hidden-$math.log" | tag >> "$bench_log"
    else
      bench_rc=$rc
      grep -q "no usable CUDA device" "$logs/bench-$hidden-$math.log" && bench_rc=nodevice
    fi
  done
  # TF32 again with one setting changed, each JSON line marked by a field of its own: the bias
  # added by a pass of its own instead of cuBLASLt's epilogue ("bias_epilogue": false), the steps
  # recorded as CUDA graphs (the benchmark itself says "cuda_graphs": true and how many steps
  # were recorded, "graph_steps"; the log how they were split), the minibatch copied on the
  # backend's stream instead of beside the step ("side_uploads": false), the output layer's
  # 27,278-float rows left unpadded (the benchmark says "padded_rows": false itself).
  for variant in NN_CUDA_BIAS_EPILOGUE=0:no-epilogue:'"bias_epilogue": false' \
                 NN_CUDA_GRAPHS=1:graphs: \
                 NN_CUDA_SIDE_UPLOADS=0:no-side:'"side_uploads": false' \
                 NN_CUDA_ROW_ALIGN=1:unpadded:; do
    setting=${variant%%:*} rest=${variant#*:}
    name=${rest%%:*} field=${rest#*:}
    [ "$(left)" -gt 60 ] || continue
    run_for 90 "$logs/bench-$hidden-tf32-$name.log" env NN_CUDA_TF32=1 "$setting" \
      "$bin/nn-bench-autoencoder" --hidden "$hidden" --batches "$batches" --epochs "$bench_epochs" \
      --optimizer RMSProp --backend cuda --device "$device" &&
      grep '^{' "$logs/bench-$hidden-tf32-$name.log" | sed "s/}\$/${field:+, $field}}/" |
      tag >> "$bench_log"
  done
  # Where the time goes: nn-train --profile's table with floors, FP32 (logs/profile-*.log).
  [ "$(left)" -gt 60 ] && run_for 60 "$logs/profile-$hidden.log" "$bin/nn-bench-autoencoder" \
    --hidden "$hidden" --batches "$batches" --epochs 1 --optimizer RMSProp --backend cuda \
    --device "$device" --profile
  if [ -n "$torch_py" ] && [ "$(left)" -gt 60 ]; then
    run_for 150 "$logs/torch-$hidden.log" "$torch_py" "$peer" --hidden "$hidden" \
      --batches "$batches" --optimizer rmsprop --device "cuda:$device" --input sparse,dense \
      --variants eager-fp32,eager-tf32,eager-bf16
    grep '^{' "$logs/torch-$hidden.log" | grep -v '"error"' | tag >> "$bench_log"
    if [ "$(left)" -gt 120 ]; then
      run_for 180 "$logs/torch-compile-$hidden.log" "$torch_py" "$peer" --hidden "$hidden" \
        --batches "$batches" --optimizer rmsprop --device "cuda:$device" --input sparse \
        --variants compile-fp32,compile-tf32,compile-bf16
      grep '^{' "$logs/torch-compile-$hidden.log" | grep -v '"error"' | tag >> "$bench_log"
      grep -q '"error"' "$logs/torch-compile-$hidden.log" &&
        say "(torch.compile failed for some variants of $hidden: logs/torch-compile-$hidden.log)"
    else
      say "(torch.compile for $hidden not run: time budget)"
    fi
  fi
done
[ -n "$torch_py" ] || say "(no PyTorch with CUDA found: no peer numbers)"
# The Fashion-MNIST CNN (scripts/bench_cnn.sh's network) on generated images in its format:
# nn-bench-cnn on CUDA next to scripts/bench_cnn.py on the same GPU, 2 epochs of 12,000 images.
if [ -x "$bin/nn-bench-cnn" ] && [ "$(left)" -gt 60 ]; then
  mkdir -p "$work/fashion"
  python3 "$check_dir/gen_fashion_idx.py" "$work/fashion" 12000 > /dev/null
  run_for 90 "$logs/cnn-bench-nn.log" "$bin/nn-bench-cnn" --data "$work/fashion" --epochs 2 \
    --backend cuda --device "$device"
  rc_cnn=$?
  grep '^{' "$logs/cnn-bench-nn.log" | sed 's/}$/, "shape": "fashion-cnn"}/' | tag >> "$bench_log"
  if [ -n "$torch_py" ]; then
    run_for 120 "$logs/cnn-bench-torch.log" "$torch_py" "$check_dir/bench_cnn.py" --data \
      "$work/fashion" --epochs 2 --device "cuda:$device"
    grep '^{' "$logs/cnn-bench-torch.log" | sed 's/}$/, "shape": "fashion-cnn"}/' | tag >> "$bench_log"
  fi
  python3 - "$logs"/cnn-bench-*.log << 'PY' | block
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        if line.startswith("{"):
            r = json.loads(line)
            print(f"fashion-cnn {r['engine']:>6}: {r['seconds_per_epoch'][-1]:.3f} s for epoch 2 "
                  f"of {r['examples']} images, test accuracy {r['test_accuracy']:.4f}")
PY
  if [ "$rc_cnn" != 0 ]; then
    tail -3 "$logs/cnn-bench-nn.log" | block
    if grep -q "no usable CUDA device" "$logs/cnn-bench-nn.log"; then
      [ "$bench_rc" = 0 ] && bench_rc=nodevice
    else
      bench_rc=$rc_cnn
    fi
  fi
fi
python3 "$check_dir/bench_table.py" "$bench_log" > "$logs/bench.txt" 2>&1
block < "$logs/bench.txt"
if [ "$bench_rc" = 0 ]; then result benchmark PASS "the table above; bench.jsonl"
elif [ "$bench_rc" = nodevice ]; then result benchmark NO-DEVICE ""
else result benchmark FAIL "a shape did not run (exit $bench_rc)"; fi
fi

# ---- 5b. sampled outputs at 1,000,000 items ---------------------------------------------------------
if want sampled; then
say ""
say "## 5b. A 1,000,000-item catalog on CUDA: sampled output (2,048 Popularity negatives) against the full layer"
if [ -f "$check_dir/bench_sampled.sh" ] && [ "$(left)" -gt 60 ]; then
  # The planted catalog of docs/wide-outputs.md's benchmark: 20,000 training users, 2 epochs of
  # each variant, recall@10 of 2,000 test users scored on the full layer.
  t=$(( $(left) - 20 < 300 ? $(left) - 20 : 300 ))
  NN_TOOLS=$tools NN_BENCH_DIR=$work/sampled NN_BENCH_BACKEND=cuda run_for "$t" "$logs/sampled.log" \
    bash "$check_dir/bench_sampled.sh" synthetic 1000000 100 20000 2 2048 2 Popularity
  rc=$?
  grep -E "^(==|   |variant|full|sampled)" "$logs/sampled.log" | head -20 | block
  rates=$(sed -n 's/^\(full\|sampled\) *best epoch.* \([0-9]*\) examples\/s.*/\1 \2/p' "$logs/sampled.log")
  full=$(awk '$1 == "full" { print $2 }' <<< "$rates")
  sampled=$(awk '$1 == "sampled" { print $2 }' <<< "$rates")
  if [ $rc = 0 ] && [ -n "$full" ] && [ -n "$sampled" ] && [ "$full" -gt 0 ]; then
    result sampled_1m_cuda PASS "sampled $sampled examples/s, full $full: $(awk -v a="$sampled" -v b="$full" 'BEGIN { printf "%.1f", a / b }')x (aim 50x); recall in the table"
  else
    # The tools' own messages are in the benchmark's logs.
    cat "$work"/sampled/synthetic-*/*.log >> "$logs/sampled.log" 2> /dev/null
    tail -5 "$logs/sampled.log" | block
    result sampled_1m_cuda "$(tool_status "$logs/sampled.log" $rc)" "bench_sampled.sh exit $rc"
  fi
else
  result sampled_1m_cuda NOT-RUN "no bench_sampled.sh or no time left"
fi
fi

# ---- 6. compute-sanitizer -------------------------------------------------------------------------
if ! want sanitizer; then
  :
elif command -v compute-sanitizer > /dev/null 2>&1; then
  say ""
  say "## 6. compute-sanitizer (memcheck, then racecheck), on a subset, in the time left"
  for tool in memcheck racecheck; do
    filter='*Loss*:*Sparse*:*TopK*:*Reductions*:*Activations*:*Optimizer*:*Sums*:*Conv*'
    # Racecheck is slow (a first run spent 255 s without finishing): kernels that use shared
    # memory, on small shapes.
    [ $tool = racecheck ] &&
      filter='*Sparse*:*Reductions*:*Sums*:CudaTopK.SelectionMatches*:CudaFusedLoss.NoRows*'
    filter=${NN_SANITIZER_FILTER:-$filter}
    t=$(( $(left) - 5 ))
    [ $tool = memcheck ] && [ $t -gt 0 ] && t=$(( t * 2 / 3 ))
    if [ $t -lt 20 ]; then result "sanitizer_$tool" NOT-RUN "time budget spent"; continue; fi
    run_for "$t" "$logs/san-$tool.log" compute-sanitizer --tool $tool --error-exitcode 99 \
      "$bin/nn_cuda_tests" --gtest_color=no --gtest_filter="$filter"
    rc=$?
    grep -m 30 -E "^=========|^\[  FAILED|ERROR SUMMARY|RACECHECK SUMMARY" "$logs/san-$tool.log" | block
    # 99: the tool found something; another non-zero exit with a clean summary is a test
    # failure under the tool (section 2's logs say which), not a sanitizer finding.
    clean=$(grep -cE "(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)" "$logs/san-$tool.log")
    case $rc in
      0) result "sanitizer_$tool" "$(gtest_status "$logs/san-$tool.log" 0)" "$(grep -c '^\[       OK \]' "$logs/san-$tool.log") tests clean" ;;
      124 | 137) result "sanitizer_$tool" NOT-RUN "stopped at the time budget ($t s)" ;;
      99) result "sanitizer_$tool" FAIL "$tool reported errors (exit 99)" ;;
      *) if [ "$clean" -gt 0 ]; then
           result "sanitizer_$tool" FAIL "no $tool findings, but tests failed under it (exit $rc)"
         else
           result "sanitizer_$tool" FAIL "exit $rc"
         fi ;;
    esac
  done
else
  result sanitizer NOT-RUN "compute-sanitizer not on PATH"
fi

say ""
say "## Result"
say "$(awk -F'\t' 'NR > 1 { n[$2]++ } END { for (s in n) printf "%s %d  ", s, n[s] }' "$results")in $(elapsed) s"
if [ $status -eq 0 ]; then say "All steps passed."; else say "Not every step passed (results.tsv)."; fi
tar -C "$work" -cJf "$outdir/logs.tar.xz" logs
echo "gpu-check: report in $report, logs in $outdir/logs.tar.xz"
exit $status
