#!/usr/bin/env bash
# The CUDA backend as a module (libnn_cuda.so, loaded at run time; docs/cuda-backend.md): the tools
# link no CUDA library and stay small in memory; a CPU or "auto" run on a machine without NVIDIA's
# driver never opens the module; "cuda" says why it cannot run (no driver, module missing, module
# broken, module from another build); the module is self-contained (no undefined symbols, no
# MPI/NetCDF of its own); nn-train --devices says where it is and lists the CUDA paths' switches.
# Usage: cuda_module.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
build=$(realpath "$tools/../..")
module=$build/lib/libnn_cuda.so
grep '^NN_CUDA_BUILT:INTERNAL=ON' "$build/CMakeCache.txt" >/dev/null ||
  { echo "SKIP: this build has no CUDA backend (no nvcc, or NN_ENABLE_CUDA=OFF)"; exit 77; }
[[ -f $module ]] || fail "$module is not built (bash scripts/setup.sh nn_cuda)"

# 1. No tool links the CUDA libraries; --help stays far below the ~235 MB they cost at start.
asan=0
ldd "$tools/nn-train" | grep libasan >/dev/null && asan=1
for t in nn-generate nn-train nn-predict nn-encode nn-serve nn-export; do
  libs=$(ldd "$tools/$t")
  if grep -E 'libcudart|libcublas|libnccl|libcurand' <<<"$libs" >/dev/null; then
    fail "$t links CUDA libraries: $(grep -E 'cuda|cublas|nccl|curand' <<<"$libs")"
  fi
  if [[ $asan == 0 ]]; then
    rss=$(peak_kib "$tools/$t" --help) || fail "$t --help: $rss"
    ((rss < 64 * 1024)) || fail "$t --help used $rss KB (limit 64 MB)"
  fi
done

# 2. The module is whole: nothing undefined but the C/C++ runtime and CUDA's, nothing of the
# engine's libraries (it carries the few engine functions it needs).
needed=$(readelf -d "$module" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
if grep -E 'libmpi|libnetcdf|libhdf5|libopenblas|libdnnl' <<<"$needed" >/dev/null; then
  fail "libnn_cuda.so needs engine libraries: $needed"
fi
exports=$(nm -D --defined-only "$module" | grep -c ' nn_cuda_module_v1$' || true)
[[ $exports == 1 ]] || fail "libnn_cuda.so does not export nn_cuda_module_v1"

tiny_ratings
tiny_datasets "$tools"
tiny_config
tool=$tools/nn-train
args=(-c config.json -i input.nc -o output.nc -n net.nc -b 4 -e 1)

# 3. Without NVIDIA's driver: "auto" trains on the CPU without opening the module (the loader's
# log lists every library opened), and "cuda" says there is no driver.
if [[ ! -e /dev/nvidiactl && ! -e /proc/driver/nvidia/version ]]; then
  LD_DEBUG=files "$tool" "${args[@]}" --backend auto >auto.log 2>auto.err || fail "auto: $(tail -5 auto.err)"
  grep -q 'libnn_cuda' auto.err && fail "backend auto opened the CUDA module without a driver"
  grep -q 'backend cpu' auto.err || fail "auto did not train on the CPU: $(grep -v '^ *[0-9]*:' auto.err | tail -5)"
  expect_status 1 "${args[@]}" --backend cuda
  grep -q "backend 'cuda': no usable CUDA device (no CUDA device: no NVIDIA driver" err.txt ||
    fail "cuda without a driver: $(cat err.txt)"
  # With the module named, it is loaded and asks the CUDA runtime itself.
  NN_CUDA_MODULE=$module expect_status 1 "${args[@]}" --backend cuda
  grep -q "backend 'cuda': no usable CUDA device (no CUDA device: cudaGetDeviceCount" err.txt ||
    fail "cuda through the module: $(cat err.txt)"
else
  NN_CUDA_MODULE=$module "$tool" "${args[@]}" --backend cuda >cuda.log 2>&1 || fail "cuda: $(tail -5 cuda.log)"
fi

# 4. A missing or broken module is named, with the reason.
NN_CUDA_MODULE=$work/nowhere/libnn_cuda.so expect_status 1 "${args[@]}" --backend cuda
grep -q "the CUDA module libnn_cuda.so was not found (looked in $work/nowhere/libnn_cuda.so)" \
  err.txt || fail "missing module: $(cat err.txt)"
echo "not a library" >broken.so
NN_CUDA_MODULE=$work/broken.so expect_status 1 "${args[@]}" --backend cuda
grep -q "the CUDA module failed to load: $work/broken.so: " err.txt ||
  fail "broken module: $(cat err.txt)"

# 5. A module built from other interface headers (tests/support/fake_cuda_module.cpp: the
# fingerprint of backend.h with a virtual function added) is refused before anything in it is
# called, with both fingerprints and how to rebuild it.
stale=$build/tests/libnn_test_cuda_module_stale.so
[[ -f $stale ]] || fail "$stale is not built (cmake --build <build> --target nn_test_cuda_module_stale)"
NN_CUDA_MODULE=$stale expect_status 1 "${args[@]}" --backend cuda
digest='interface [0-9a-f]{16}'
refused="$stale is from another build \\($digest; this program: $digest\\); rebuild it with the tools"
grep -Eq "$refused \\(bash scripts/setup.sh nn_cuda\\)" err.txt || fail "stale module: $(cat err.txt)"
# 6. nn-train --devices: where the module was found (its real path), or why CUDA is not
# available, and the CUDA path table (docs/cuda-backend.md), every path off by default until a
# GPU run has passed it.
NN_CUDA_MODULE=$module "$tools/nn-train" --devices >devices.txt 2>&1 || fail "--devices: $(cat devices.txt)"
grep -q "^cpu: [0-9]* threads" devices.txt || fail "--devices: no cpu line: $(cat devices.txt)"
grep -qx "cuda module: $(realpath "$module")" devices.txt || fail "--devices: $(cat devices.txt)"
paths=$(grep -c '^cuda path: [a-z-]* NN_CUDA_[A-Z_]* on=[0-9]* off=[0-9]* default=o[nf]f* passed=' devices.txt)
((paths >= 9)) || fail "--devices: $paths path lines: $(cat devices.txt)"
if grep '^cuda path: .* default=on passed=never' devices.txt; then fail "a path on by default that never passed"; fi
NN_CUDA_MODULE=$stale "$tools/nn-train" --devices >devices.txt 2>&1 || fail "--devices (stale): $(cat devices.txt)"
grep -q "^cuda: not available: $stale is from another build" devices.txt ||
  fail "--devices with a stale module: $(cat devices.txt)"
echo "cuda_module: all checks passed"
