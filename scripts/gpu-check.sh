#!/usr/bin/env bash
# The GPU check, one command: builds with CUDA, runs every CUDA-labelled test (each kernel family
# on both backends against each other; the NCCL communicator against the host collectives, with
# 2 ranks and a 2-rank training run too when there are 2 GPUs), runs compute-sanitizer (memcheck,
# racecheck, synccheck) on them, trains a small sparse autoencoder with --backend cuda and --backend cpu and compares
# the per-epoch losses, and runs the MovieLens-20M-shaped benchmark (scripts/bench_autoencoder.sh
# shapes) on the GPU next to PyTorch on the same GPU. Writes one report (Markdown).
#
# Usage: scripts/gpu-check.sh [REPORT]          (default REPORT: gpu-check-report.md)
#   NN_BUILD_DIR   build directory (default build-gpu)
#   NN_SKIP_BUILD=1  use an existing build (e.g. one built elsewhere and copied here: the GPU
#                  machines may lack NetCDF/MPI development packages)
#   NN_CUDA_ARCH   CUDA architectures (default 90: H100/H200)
#   NN_BENCH_BATCHES  timed batches per benchmark shape (default 50)
#   NN_DEVICE      CUDA device index (default 0)
#   NN_CUDNN_LIBRARY  path of libcudnn.so.9 (cuDNN is loaded at run time, for convolution, LRN
#                  and batch norm); when unset and the loader cannot find it, the cuDNN of the
#                  PyTorch wheels (python package nvidia.cudnn) is used if present
# Exit status: 0 when every step passed, 1 otherwise (the report says which step failed).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report=$(realpath -m "${1:-gpu-check-report.md}")
build=$(realpath -m "${NN_BUILD_DIR:-$root/build-gpu}")
arch=${NN_CUDA_ARCH:-90}
batches=${NN_BENCH_BATCHES:-50}
device=${NN_DEVICE:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

say() { printf '%s\n' "$*" | tee -a "$report"; }
block() { printf '\n```\n' >> "$report"; cat >> "$report"; printf '```\n\n' >> "$report"; }
step_failed() { say "**FAILED: $1**"; status=1; }

: > "$report"
say "# GPU check ($(date -u '+%Y-%m-%d %H:%M UTC'))"
say ""
say "Commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  nvcc --version 2>&1 | tail -1 || true; } | block

# ---- 1. build ------------------------------------------------------------------------------------
say "## 1. Build with CUDA (sm_$arch)"
if [ "${NN_SKIP_BUILD:-0}" != 1 ]; then
  if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNN_ENABLE_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES="$arch" > "$work/configure.log" 2>&1; then
    tail -30 "$work/configure.log" | block; step_failed "configure"; exit 1
  fi
  grep -E "nn: (CUDA backend|NCCL)" "$work/configure.log" | block
  grep -q "nn: CUDA backend ON" "$work/configure.log" || { step_failed "nvcc not found: no CUDA backend"; exit 1; }
  targets=(nn_cuda_tests nn_backend_tests nn-train nn-generate nn-bench-autoencoder)
  grep -q "nn: NCCL communicator ON" "$work/configure.log" && targets+=(nn_nccl_tests)
  if ! cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$work/build.log" 2>&1; then
    tail -40 "$work/build.log" | block; step_failed "build"; exit 1
  fi
  say "built into $build"
fi
cuda_tests=$build/tests/nn_cuda_tests
[ -x "$cuda_tests" ] || { step_failed "$cuda_tests missing (a build without CUDA?)"; exit 1; }

# cuDNN is dlopen'ed by the backend (backend/cuda/cudnn_support.h); without it the convolution,
# LRN and batch-norm parity tests fail with "cuDNN cannot be loaded".
if [ -z "${NN_CUDNN_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 '; then
  wheel=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib", "libcudnn.so.9"))' 2>/dev/null || true)
  [ -n "$wheel" ] && [ -f "$wheel" ] && export NN_CUDNN_LIBRARY=$wheel
fi
say "cuDNN: ${NN_CUDNN_LIBRARY:-libcudnn.so.9 on the library path}"

# ---- 2. CUDA parity tests ---------------------------------------------------------------------
say "## 2. CUDA-labelled tests (CUDA backend vs CPU backend)"
"$cuda_tests" > "$work/cuda-tests.log" 2>&1 || step_failed "cuda tests"
grep -E "^\[  (FAILED|SKIPPED|PASSED) |tests ran" "$work/cuda-tests.log" | tail -30 | block
# A skipped test means no usable device: the check proved nothing.
if grep -q "^\[  SKIPPED \]" "$work/cuda-tests.log"; then
  grep -m 3 "no CUDA device" "$work/cuda-tests.log" | block
  step_failed "CUDA tests skipped (no usable device)"
fi
# The backend unit tests' CUDA instances: every test of tests/unit/backend run on the CUDA backend
# against the same references and tolerances as on the CPU (ctest -L cuda runs them too, as one
# entry).
backend_tests=$build/tests/nn_backend_tests
"$backend_tests" --gtest_filter='*/cuda*' > "$work/backend-cuda.log" 2>&1 ||
  step_failed "backend unit tests on CUDA"
grep -E "suites ran|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \]" \
  "$work/backend-cuda.log" | head -40 | block
# (Four SMCE-on-SoftMax instances skip by design, on every backend: only "no CUDA device" counts.)
if grep -q "no CUDA device" "$work/backend-cuda.log"; then
  grep -m 1 "no CUDA device" "$work/backend-cuda.log" | block
  step_failed "backend unit tests on CUDA skipped (no usable device)"
fi
ctest --test-dir "$build" -L cuda > "$work/ctest.log" 2>&1 || step_failed "ctest -L cuda"
tail -3 "$work/ctest.log" | block
# The host tests of the kernels' arithmetic and the device probe, for completeness.
"$build/tests/nn_backend_tests" --gtest_filter='HostKernelMath.*:CudaProbe.*:MakeBackend.*:CudnnHost.*' \
  > "$work/host.log" 2>&1 || step_failed "host kernel-math tests"
tail -5 "$work/host.log" | block

# ---- 2b. NCCL communicator -----------------------------------------------------------------------
# Every collective over NCCL against the host communicator, and the gradient reduction of a CUDA
# network. One rank always; two ranks (under mpirun) only with two GPUs: NCCL refuses two ranks
# on one device.
say "## 2b. NCCL communicator (NCCL vs host collectives)"
gpus=$(nvidia-smi -L 2> /dev/null | grep -c "^GPU" || true)
nccl_tests=$build/tests/nn_nccl_tests
if [ -x "$nccl_tests" ]; then
  "$nccl_tests" > "$work/nccl-1.log" 2>&1 || step_failed "NCCL tests, 1 rank"
  grep -E "^\[  (FAILED|SKIPPED|PASSED) |tests ran" "$work/nccl-1.log" | tail -15 | block
  grep -q "^\[  SKIPPED \]" "$work/nccl-1.log" && step_failed "NCCL tests skipped (no usable device)"
  if [ "${gpus:-0}" -ge 2 ] && command -v mpirun > /dev/null 2>&1; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NN_MPI_TIMEOUT=120 \
      mpirun -np 2 "$nccl_tests" > "$work/nccl-2.log" 2>&1 || step_failed "NCCL tests, 2 ranks"
    grep -E "^\[  (FAILED|SKIPPED|PASSED) |tests ran" "$work/nccl-2.log" | sort | uniq -c | block
    grep -q "^\[  SKIPPED \]" "$work/nccl-2.log" && step_failed "NCCL tests, 2 ranks: skipped"
  else
    say "(2-rank NCCL run not done: it needs 2 GPUs and mpirun; this machine has ${gpus:-0} GPU(s)$(command -v mpirun > /dev/null 2>&1 || echo ', no mpirun'))"
  fi
else
  # Not a failure of the CUDA backend: this build found no libnccl (the GPU machine may lack it).
  say "**NCCL communicator NOT checked: $nccl_tests missing (no libnccl at configure time)**"
fi

# ---- 3. compute-sanitizer -----------------------------------------------------------------------
say "## 3. compute-sanitizer"
if command -v compute-sanitizer > /dev/null 2>&1; then
  for tool in memcheck racecheck synccheck initcheck; do
    filter='*'
    # racecheck and initcheck are slow: the kernels with shared memory and barriers, and the
    # kernels that read scratch memory.
    [ "$tool" = racecheck ] && filter='*Loss*:*Sparse*:*Activations*:*Reductions*'
    [ "$tool" = initcheck ] && filter='*Sparse*:*TopK*:*Loss*'
    if compute-sanitizer --tool "$tool" --error-exitcode 99 "$cuda_tests" \
         --gtest_filter="$filter" > "$work/san-$tool.log" 2>&1; then
      say "- $tool: clean ($(grep -c '^\[       OK \]' "$work/san-$tool.log") tests)"
    else
      step_failed "compute-sanitizer --tool $tool"
      grep -m 40 -E "=========|FAILED" "$work/san-$tool.log" | block
    fi
  done
  # The backend unit tests' CUDA instances under memcheck.
  if compute-sanitizer --tool memcheck --error-exitcode 99 "$backend_tests" \
       --gtest_filter='*/cuda*' > "$work/san-backend.log" 2>&1; then
    say "- memcheck, backend unit tests on CUDA: clean ($(grep -c '^\[       OK \]' "$work/san-backend.log") tests)"
  else
    step_failed "compute-sanitizer --tool memcheck on the backend unit tests' CUDA instances"
    grep -m 40 -E "=========|FAILED" "$work/san-backend.log" | block
  fi
else
  step_failed "compute-sanitizer not on PATH"
fi

# ---- 4. training run: cuda vs cpu ----------------------------------------------------------------
say "## 4. Gradient check and training run, --backend cuda vs --backend cpu (per-epoch loss)"
tools=$build/src/tools
(
  cd "$work" || exit 1
  python3 - <<'PY'
import random
random.seed(11)
with open("ratings.txt", "w") as f:
    for u in range(3000):
        taste = u % 7
        items = {f"i{taste * 60 + random.randrange(60)}" for _ in range(25)}
        items |= {f"i{random.randrange(1000)}" for _ in range(5)}
        f.write(f"u{u}\t" + ":".join(sorted(items)) + "\n")
PY
  "$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c &&
  "$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
  cat > net.json <<'JSON'
{ "Name": "gpu-check", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "H1", "Kind": "Hidden", "N": 256, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "H2", "Kind": "Hidden", "N": 128, "Activation": "RectifiedLinear" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
  # Gradient check on CUDA: backward against finite differences (nn-train --validate).
  sed 's/, "pDropout": 0.1//' net.json > net-check.json
  "$tools/nn-train" --validate -c net-check.json -i input.nc -o output.nc -b 32 --backend cuda \
    --device "$device" > validate-cuda.log 2>&1 || { echo "nn-train --validate --backend cuda failed"; tail -20 validate-cuda.log; exit 1; }
  grep -c PASS validate-cuda.log | sed 's/^/gradient check on CUDA: PASS lines: /'
  for be in cpu cuda; do
    "$tools/nn-train" -c net.json -i input.nc -o output.nc -n "net-$be.nc" -b 128 -e 5 \
      --optimizer Adam --alpha 0.002 --seed 7 --checkpoint-interval 0 --backend "$be" \
      --device "$device" > "train-$be.log" 2>&1 || { echo "nn-train --backend $be failed"; tail -20 "train-$be.log"; exit 1; }
  done
) > "$work/train.log" 2>&1 || { block < "$work/train.log"; step_failed "gradient check or training run"; }
grep "gradient check on CUDA" "$work/train.log" | block
if [ -s "$work/net-cuda.epochs.jsonl" ] && [ -s "$work/net-cpu.epochs.jsonl" ]; then
  python3 - "$work/net-cpu.epochs.jsonl" "$work/net-cuda.epochs.jsonl" > "$work/compare.txt" <<'PY'
import json, sys
cpu = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gpu = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = len(cpu) == len(gpu) and len(cpu) > 0
print(f"{'epoch':>5} {'loss cpu':>14} {'loss cuda':>14} {'rel diff':>10} {'s/epoch cpu':>12} {'s/epoch cuda':>12}")
for c, g in zip(cpu, gpu):
    rel = abs(c["loss"] - g["loss"]) / max(1e-12, abs(c["loss"]))
    # Same data order, same dropout masks (counter-based RNG): only summation order differs.
    ok = ok and rel < 1e-3
    print(f"{c['epoch']:>5} {c['loss']:>14.6f} {g['loss']:>14.6f} {rel:>10.2e} {c['seconds']:>12.3f} {g['seconds']:>12.3f}")
print("MATCH" if ok else "MISMATCH (tolerance 1e-3 relative per epoch)")
sys.exit(0 if ok else 1)
PY
  [ $? -eq 0 ] || step_failed "per-epoch losses differ"
  block < "$work/compare.txt"
else
  step_failed "no per-epoch logs"
fi

# ---- 4b. data-parallel training over NCCL (2 GPUs) ------------------------------------------------
# Two ranks, one GPU each (no --device: each rank takes its node-local rank's device), gradients
# reduced by NCCL; per-epoch losses must match the one-process CUDA run above.
if [ "${gpus:-0}" -ge 2 ] && command -v mpirun > /dev/null 2>&1 && [ -s "$work/net-cuda.epochs.jsonl" ]; then
  say "## 4b. Data-parallel training, 2 ranks over NCCL vs 1 rank (per-epoch loss)"
  (
    cd "$work" || exit 1
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NN_MPI_TIMEOUT=300 \
      mpirun -np 2 "$tools/nn-train" -c net.json -i input.nc -o output.nc -n net-nccl.nc -b 128 \
      -e 5 --optimizer Adam --alpha 0.002 --seed 7 --checkpoint-interval 0 --backend cuda \
      > train-nccl.log 2>&1 || { echo "mpirun -np 2 nn-train --backend cuda failed"; tail -20 train-nccl.log; exit 1; }
    grep -E "^rank [0-9]+ on|gradient communicator|data parallel: 2 ranks" train-nccl.log
    grep -q "backend buffers over nccl" train-nccl.log || { echo "NCCL was not used"; exit 1; }
  ) > "$work/train-nccl.out" 2>&1 || step_failed "2-rank NCCL training run"
  block < "$work/train-nccl.out"
  if [ -s "$work/net-nccl.epochs.jsonl" ]; then
    python3 - "$work/net-cuda.epochs.jsonl" "$work/net-nccl.epochs.jsonl" > "$work/compare-nccl.txt" <<'PY'
import json, sys
one = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
two = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
ok = len(one) == len(two) and len(one) > 0
print(f"{'epoch':>5} {'loss 1 rank':>14} {'loss 2 ranks':>14} {'rel diff':>10}")
for a, b in zip(one, two):
    rel = abs(a["loss"] - b["loss"]) / max(1e-12, abs(a["loss"]))
    # Same rows, same masks (by global example position): only summation order differs.
    ok = ok and rel < 1e-3
    print(f"{a['epoch']:>5} {a['loss']:>14.6f} {b['loss']:>14.6f} {rel:>10.2e}")
print("MATCH" if ok else "MISMATCH (tolerance 1e-3 relative per epoch)")
sys.exit(0 if ok else 1)
PY
    [ $? -eq 0 ] || step_failed "2-rank NCCL losses differ from 1 rank"
    block < "$work/compare-nccl.txt"
  fi
else
  say "(4b. 2-rank NCCL training not run: it needs 2 GPUs, mpirun and the 1-rank CUDA run)"
fi

# ---- 5. benchmark --------------------------------------------------------------------------------
say "## 5. MovieLens-20M-shaped autoencoder on the GPU (27,278 items, ~144 nnz, batch 256)"
bench=$build/bench/nn-bench-autoencoder
: > "$work/bench.jsonl"
for hidden in 128 1024x3; do
  "$bench" --hidden "$hidden" --batches "$batches" --optimizer RMSProp --backend cuda \
    --device "$device" >> "$work/bench.jsonl" 2>> "$work/bench.err" || step_failed "benchmark $hidden"
  py=""
  for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
      py=$candidate
      break
    fi
  done
  if [ -n "$py" ]; then
    "$py" "$root/scripts/bench_peer_torch.py" --hidden "$hidden" --batches "$batches" \
      --optimizer rmsprop --device "cuda:$device" >> "$work/bench.jsonl" 2>> "$work/bench.err" ||
      say "(PyTorch peer failed for $hidden)"
  else
    say "(no PyTorch with CUDA: no peer numbers)"
  fi
done
python3 - "$work/bench.jsonl" > "$work/bench.txt" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
batches_per_epoch = math.ceil(138493 / 256)
print(f"{'hidden':>8} {'engine':>10} {'ms/batch':>9} {'s/epoch':>8} {'TFLOP/s':>8}  notes")
for r in rows:
    eng = "nn-cuda" if r.get("engine") == "nn" else "torch-" + r.get("device", "?")
    gflops = r.get("gflops", 0.0)
    note = f"sgemm peak {r['sgemm_peak_gflops'] / 1e3:.1f} TFLOP/s" if "sgemm_peak_gflops" in r else ""
    print(f"{str(r['hidden']).removesuffix('x1'):>8} {eng:>10} {r['ms_per_batch']:>9.2f} "
          f"{r['ms_per_batch'] * batches_per_epoch / 1e3:>8.2f} {gflops / 1e3:>8.2f}  {note}")
print()
for r in rows: print(json.dumps(r))
PY
block < "$work/bench.txt"
[ -s "$work/bench.err" ] && tail -10 "$work/bench.err" | block

say "## Result"
if [ $status -eq 0 ]; then say "All steps passed."; else say "Some steps FAILED (see above)."; fi
echo "gpu-check: report written to $report"
exit $status
