#!/usr/bin/env bash
# The GPU check, one command. On a machine with a GPU it runs: every CUDA-labelled test (each kernel
# family on the CUDA backend against the CPU backend), the backend unit tests' CUDA instances, the
# NCCL communicator tests, the gradient check on CUDA, a training run and a prediction run with
# --backend cuda against --backend cpu, the MovieLens-20M-shaped benchmark (FP32 and TF32) next to
# PyTorch on the same GPU, and compute-sanitizer (memcheck, then racecheck) on a subset in whatever
# time is left. Writes a Markdown report, a results table and the logs.
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
#   NN_BENCH_BATCHES timed batches per benchmark shape (default 50)
#   NN_CHECK_STEPS   which steps, comma-separated (default tests,nccl,train,cnn,bench,sanitizer; the
#                    library check always runs): a second run on the same lease can redo only
#                    what failed
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
device=${NN_DEVICE:-0}
steps=${NN_CHECK_STEPS:-tests,nccl,train,cnn,bench,sanitizer}
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
  -h | --help) sed -n '2,26p' "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
  peer=$bundle_dir/scripts/bench_peer_torch.py
  cnn_config=$bundle_dir/configs/image-cnn-cifar10
  say "Bundle: $(tr '\n' ';' < "$bundle_dir/BUNDLE" | sed 's/;$//; s/;/; /g')"
else
  build=$(realpath -m "${NN_BUILD_DIR:-$root/build-gpu}")
  say "Commit: $(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown); build $build"
  if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNN_ENABLE_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="${NN_CUDA_ARCH:-90}" > "$logs/configure.log" 2>&1 &&
     grep -q "nn: CUDA backend ON" "$logs/configure.log"; then
    targets=(nn_cuda nn_cuda_tests nn_backend_tests nn-train nn-generate nn-predict nn-encode
             nn-bench-autoencoder)
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
  for f in "$build"/tests/nn_cuda_tests "$build"/tests/nn_backend_tests "$build"/tests/nn_nccl_tests \
           "$build"/src/tools/nn-{train,generate,predict,encode} "$build"/bench/nn-bench-autoencoder; do
    [ -x "$f" ] && ln -s "$f" "$work/bin/"
  done
  bin=$work/bin
  tools=$bin
  peer=$root/scripts/bench_peer_torch.py
  cnn_config=$root/configs/image-cnn-cifar10
fi

# ---- 1. device, driver and the CUDA libraries -------------------------------------------------------
say ""
say "## 1. Device, driver and libraries"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>&1 ||
    echo "(no nvidia-smi)"
  uname -srm; } | block
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

# ---- 4. gradient check, training and prediction: cuda against cpu ---------------------------------
if want train; then
say """"
say "## 4. Gradient check, training and prediction: --backend cuda against --backend cpu"
data=$work/data
mkdir -p "$data"
(
  cd "$data" || exit 1
  # 3,000 users of 7 tastes, 60 items per taste, 25 liked items plus 5 random ones each.
  awk 'BEGIN { srand(11); for (u = 0; u < 3000; ++u) { t = u % 7; delete seen; line = "";
         for (k = 0; k < 30; ++k) { i = (k < 25) ? t * 60 + int(rand() * 60) : int(rand() * 1000);
           if (!(i in seen)) { seen[i] = 1; line = line (line == "" ? "" : ":") "i" i } }
         print "u" u "\t" line } }' > ratings.txt
  "$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c &&
    "$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
) > "$logs/generate.log" 2>&1 || { tail -5 "$logs/generate.log" | block; }
cat > "$data/net.json" << 'JSON'
{ "Name": "gpu-check", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "H1", "Kind": "Hidden", "N": 256, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "H2", "Kind": "Hidden", "N": 128, "Activation": "RectifiedLinear" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
sed 's/, "pDropout": 0.1//' "$data/net.json" > "$data/net-check.json"
(cd "$data" && run_for 120 "$logs/validate-cuda.log" "$tools/nn-train" --validate -c net-check.json \
  -i input.nc -o output.nc -b 32 --backend cuda --device "$device")
rc=$?
grep -E "PASS|FAIL|passed|error" "$logs/validate-cuda.log" | tail -8 | block
result gradient_check_cuda "$(tool_status "$logs/validate-cuda.log" $rc)" "nn-train --validate --backend cuda"
for be in cpu cuda; do
  (cd "$data" && run_for 150 "$logs/train-$be.log" "$tools/nn-train" -c net.json -i input.nc \
    -o output.nc -n "net-$be.nc" -b 128 -e 5 --optimizer Adam --alpha 0.002 --seed 7 \
    --checkpoint-interval 0 --backend "$be" --device "$device")
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
else
  tail -5 "$logs/cnn-encode.log" | block
  result cnn_cuda_vs_cpu FAIL "nn-encode failed"
fi
fi

# ---- 5. benchmark ---------------------------------------------------------------------------------
if want bench; then
say """"
say "## 5. MovieLens-20M-shaped autoencoder (27,278 items, ~144 non-zeros, batch 256), next to PyTorch"
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
bench_rc=0
for math in fp32 tf32; do
  for hidden in 128 1024x3; do
    [ "$(left)" -gt 60 ] || { say "(benchmark $hidden $math not run: time budget)"; bench_rc=124; continue; }
    NN_CUDA_TF32=$([ $math = tf32 ] && echo 1 || echo 0) run_for 90 "$logs/bench-$hidden-$math.log" \
      "$bin/nn-bench-autoencoder" --hidden "$hidden" --batches "$batches" --optimizer RMSProp \
      --backend cuda --device "$device"
    rc=$?
    if [ $rc = 0 ]; then
      grep '^{' "$logs/bench-$hidden-$math.log" | sed "s/}\$/, \"math\": \"$math\"}/" >> "$bench_log"
    else
      bench_rc=$rc
      grep -q "no usable CUDA device" "$logs/bench-$hidden-$math.log" && bench_rc=nodevice
    fi
    if [ -n "$torch_py" ]; then
      flags=()
      [ $math = tf32 ] && flags+=(--tf32)
      run_for 120 "$logs/torch-$hidden-$math.log" "$torch_py" "$peer" --hidden "$hidden" \
        --batches "$batches" --optimizer rmsprop --device "cuda:$device" "${flags[@]}" &&
        grep '^{' "$logs/torch-$hidden-$math.log" >> "$bench_log"
      if [ $math = fp32 ] && [ "$(left)" -gt 90 ]; then
        run_for 120 "$logs/torch-compile-$hidden.log" "$torch_py" "$peer" --hidden "$hidden" \
          --batches "$batches" --optimizer rmsprop --device "cuda:$device" --compile &&
          grep '^{' "$logs/torch-compile-$hidden.log" >> "$bench_log" ||
          say "(torch.compile did not work for $hidden: logs/torch-compile-$hidden.log)"
      fi
    fi
  done
done
[ -n "$torch_py" ] || say "(no PyTorch with CUDA found: no peer numbers)"
python3 - "$bench_log" > "$logs/bench.txt" << 'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
per_epoch = math.ceil(138493 / 256)
def name(r):
    if r.get("engine") == "nn": return "nn-cuda"
    return "torch" + ("-compile" if r.get("compiled") else "")
print(f"{'hidden':>7} {'math':>5} {'engine':>14} {'ms/batch':>9} {'s/epoch':>8} {'TFLOP/s':>8} {'vs torch':>9}")
for r in rows:
    h = str(r["hidden"]).removesuffix("x1")
    peers = [p for p in rows if name(p) == "torch" and str(p["hidden"]).removesuffix("x1") == h
             and p.get("math", "fp32") == r.get("math", "fp32")]
    ratio = f"{peers[0]['ms_per_batch'] / r['ms_per_batch']:.2f}x" if peers and name(r) == "nn-cuda" else ""
    print(f"{h:>7} {r.get('math', 'fp32'):>5} {name(r):>14} {r['ms_per_batch']:>9.2f} "
          f"{r['ms_per_batch'] * per_epoch / 1e3:>8.3f} {r.get('gflops', 0) / 1e3:>8.2f} {ratio:>9}")
PY
block < "$logs/bench.txt"
if [ "$bench_rc" = 0 ]; then result benchmark PASS "s/epoch = ms/batch x 541"
elif [ "$bench_rc" = nodevice ]; then result benchmark NO-DEVICE ""
else result benchmark FAIL "a shape did not run (exit $bench_rc)"; fi
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
