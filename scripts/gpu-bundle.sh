#!/usr/bin/env bash
# Builds exactly what the GPU check runs and packs it into one self-contained archive for a GPU
# machine that has the NVIDIA driver and the CUDA libraries (cuBLAS, cuRAND, NCCL, cuDNN, as
# system libraries or inside Python wheels) but none of this project's Debian packages.
#
#   Release, CUDA for sm_90 (H100/H200), NN_NATIVE=OFF (no -march=native: the GPU machine's CPU
#   may lack this one's instructions), the CUDA runtime linked statically, no Python module.
#   Packed: the binaries (stripped), every shared library they need except glibc, the driver and
#   the CUDA libraries (their RUNPATH set to $ORIGIN-relative paths, so nothing refers to a path of
#   this machine), Open MPI's launcher (mpirun with its components and help texts), the engine's
#   shared library with include/nn and the Python module's sources (compiled on the GPU machine
#   for its Python), the check (scripts/gpu_check/, run by gpu-check.sh --in-bundle) and the PyTorch peer of the
#   benchmark. xz-compressed; the archive must stay under 48 MiB.
#
# Usage: scripts/gpu-bundle.sh                (prints the archive's path as its last line)
#   NN_BUNDLE_BUILD  build directory (default build-bundle; kept apart from build/)
#   NN_BUNDLE_OUT    folder of the archive (default out/gpu-bundle; git ignores /out/)
#   NN_CUDA_ARCH     CUDA architectures (default 90)
# The GPU machine runs it with: scripts/gpu-check.sh --bundle out/gpu-bundle/nn-gpu-bundle.tar.xz --call 1, then --call 2
# scripts/gpu-rehearsal.sh tries that archive in a minimal Debian root without a GPU first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${NN_BUNDLE_BUILD:-$root/build-bundle}")
out=$(realpath -m "${NN_BUNDLE_OUT:-$root/out/gpu-bundle}")
arch=${NN_CUDA_ARCH:-90}
limit=$((48 * 1024 * 1024))
say() { echo "gpu-bundle: $*" >&2; }
die() { echo "gpu-bundle: error: $*" >&2; exit 1; }

if ! command -v patchelf > /dev/null || ! command -v xz > /dev/null; then
  say "installing patchelf and xz-utils"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends patchelf xz-utils > /dev/null
fi
for tool in cmake patchelf xz strip ldd; do
  command -v "$tool" > /dev/null || die "$tool is not installed (apt-get install patchelf xz-utils binutils cmake)"
done

# ---- build ---------------------------------------------------------------------------------------
launcher=()
command -v ccache > /dev/null 2>&1 &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
say "configuring $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DNN_ENABLE_CUDA=ON -DNN_NATIVE=OFF \
  -DNN_CUDA_STATIC_RUNTIME=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DNN_BUILD_PYTHON=OFF \
  "${launcher[@]}" > "$build/configure.log" 2>&1 || { tail -30 "$build/configure.log" >&2; die "configure failed"; }
grep -q "nn: CUDA backend ON" "$build/configure.log" || die "no CUDA backend (nvcc not found?)"
targets=(nn_cuda nn_library nn_cuda_tests nn_backend_tests nn_predict_tests nn-train nn-generate
         nn-predict nn-encode nn-serve nn-bench-autoencoder nn-bench-serve-load nn-bench-cnn)
grep -q "nn: NCCL communicator ON" "$build/configure.log" && targets+=(nn_nccl_tests)
say "building ${targets[*]}"
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$build/build.log" 2>&1 ||
  { tail -40 "$build/build.log" >&2; die "build failed"; }

binaries=("$build/tests/nn_cuda_tests" "$build/tests/nn_backend_tests" "$build/tests/nn_predict_tests"
          "$build/src/tools/nn-train" "$build/src/tools/nn-generate" "$build/src/tools/nn-predict"
          "$build/src/tools/nn-encode" "$build/src/tools/nn-serve" "$build/bench/nn-bench-autoencoder"
          "$build/bench/nn-bench-serve-load" "$build/bench/nn-bench-cnn")
[ -x "$build/tests/nn_nccl_tests" ] && binaries+=("$build/tests/nn_nccl_tests")

# ---- stage ---------------------------------------------------------------------------------------
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
top=$stage/nn-gpu-bundle
mkdir -p "$top/bin" "$top/lib" "$top/scripts" "$top/configs"

# Left to the GPU machine: glibc (its own is at least as new as Debian 12's), the driver, and the
# CUDA libraries it ships in a matching version (CUDA 13: libcublas.so.13, libcurand.so.10,
# libnccl.so.2; cuDNN is loaded at run time). Everything else the binaries need travels.
provided_re='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|linux-vdso|libcuda|libcudart|libcublas|libcublasLt|libcurand|libnccl|libcudnn[a-z_]*|libnvidia-[a-z-]*)\.so'
declare -A libs=()
for bin in "${binaries[@]}"; do
  missing=$(ldd "$bin" | awk '/not found/ { print $1 }')
  [ -z "$missing" ] || die "$bin: libraries not found here: $missing"
  while read -r name path; do
    [[ $name =~ $provided_re ]] && continue
    [ -n "$path" ] && [ -f "$path" ] && libs[$name]=$path
  done < <(ldd "$bin" | awk '$2 == "=>" { print $1, $3 }')
  cp "$bin" "$top/bin/"
done
# The CUDA backend is a module the tools open at run time (bin/../lib/libnn_cuda.so): it travels
# in lib/ with what it needs.
module=$build/lib/libnn_cuda.so
[ -f "$module" ] || die "$module was not built"
while read -r name path; do
  [[ $name =~ $provided_re ]] && continue
  [ -n "$path" ] && [ -f "$path" ] && libs[$name]=$path
done < <(ldd "$module" | awk '$2 == "=>" { print $1, $3 }')
libs[libnn_cuda.so]=$module
# The engine's shared library (include/nn/ is its interface), for the Python module the check
# compiles on the GPU machine for that machine's Python (python/src, pybind11 there).
library=$(readlink -f "$build/src/engine/libnn.so")
soname=$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ -n "$soname" ] || die "$library has no SONAME"
while read -r name path; do
  [[ $name =~ $provided_re ]] && continue
  [ -n "$path" ] && [ -f "$path" ] && libs[$name]=$path
done < <(ldd "$library" | awk '$2 == "=>" { print $1, $3 }')
libs[$soname]=$library
mkdir -p "$top/include" "$top/python"
cp -r "$root/include/nn" "$top/include/"
cp -r "$root/python/src" "$root/python/nnsuite" "$top/python/"
rm -rf "$top/python/nnsuite/__pycache__"

# Open MPI's launcher for the check's mpirun step, relocated into the bundle: mpirun (orterun),
# the components it and the MPI library open at run time (lib/openmpi3: all but those needing
# InfiniBand, UCX, libfabric or PSM, which a one-GPU machine does not use), PMIx's plugins
# (lib/pmix) and both help-text folders; the check (gpu_check/environment.py) points OPAL_* and PMIX_* at them.
add_deps() {  # add_deps FILE: the libraries FILE needs join the bundle's
  while read -r name path; do
    [[ $name =~ $provided_re ]] && continue
    [ -n "$path" ] && [ -f "$path" ] && libs[$name]=$path
  done < <(ldd "$1" | awk '$2 == "=>" { print $1, $3 }')
}
mpi_dirs=()
if command -v ompi_info > /dev/null && command -v mpirun > /dev/null; then
  pkglibdir=$(ompi_info --path pkglibdir | awk '{ print $2 }')
  pkgdatadir=$(ompi_info --path pkgdatadir | awk '{ print $2 }')
  mkdir -p "$top/lib/openmpi3" "$top/lib/pmix" "$top/share/openmpi" "$top/share/pmix"
  cp -L "$(command -v mpirun)" "$top/bin/mpirun"
  add_deps "$top/bin/mpirun"
  for c in "$pkglibdir"/*.so; do
    # (No early exit in a pipeline: with pipefail, ldd's SIGPIPE would end the script.)
    ldd "$c" | grep -E '^\s*lib(ucp|ucs|uct|fabric|psm_infinipath|psm2|ibverbs|rdmacm)\.' > /dev/null &&
      continue
    cp "$c" "$top/lib/openmpi3/"
    add_deps "$c"
  done
  cp -r "$pkgdatadir/." "$top/share/openmpi/"
  pmix=$(ldd "$module" "$top/bin/mpirun" "$top"/lib/openmpi3/*.so |
         awk '$1 == "libpmix.so.2" && !p { p = $3 } END { print p }')
  if [ -n "$pmix" ]; then
    pmix_root=$(dirname "$(dirname "$(readlink -f "$pmix")")")  # .../pmix2
    [ -d "$pmix_root/lib/pmix" ] && cp "$pmix_root"/lib/pmix/*.so "$top/lib/pmix/"
    [ -d "$pmix_root/share/pmix" ] && cp -r "$pmix_root/share/pmix/." "$top/share/pmix/"
    for f in "$top"/lib/pmix/*.so; do [ -f "$f" ] && add_deps "$f"; done
  fi
  mpi_dirs=("$top/lib/openmpi3" "$top/lib/pmix")
  say "Open MPI's launcher: mpirun, $(ls "$top/lib/openmpi3" | wc -l) components"
else
  say "no mpirun/ompi_info here: the bundle has no launcher (the check's mpi step will say so)"
fi
for name in "${!libs[@]}"; do cp -L "${libs[$name]}" "$top/lib/$name"; done
chmod -R u+w "$top"/bin "$top"/lib
strip --strip-unneeded "$top"/bin/* "$top"/lib/*.so* 2> /dev/null || true
for f in "$top"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$top"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for d in "${mpi_dirs[@]}"; do
  for f in "$d"/*.so; do
    [ -f "$f" ] || continue
    strip --strip-unneeded "$f" 2> /dev/null || true
    patchelf --set-rpath '$ORIGIN/..' "$f"
  done
done

mkdir -p "$top/scripts/gpu_check"
cp "$root"/scripts/gpu_check/*.py "$top/scripts/gpu_check/"
cp "$root/scripts/gpu-check.sh" "$root/scripts/bench_peer_torch.py" "$root/scripts/bench_table.py" \
  "$root/scripts/gpu_serve_check.py" "$root/scripts/bench_sampled.sh" "$root/scripts/bench_sampled.py" \
  "$root/scripts/bench_cnn.py" "$root/scripts/gen_fashion_idx.py" \
  "$top/scripts/"
cp -r "$root/configs/image-cnn-cifar10" "$root/configs/recommender-mult-vae" "$top/configs/"
commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain 2> /dev/null | grep -v '^??' > /dev/null && echo "+changes" || true)
{
  echo "commit=$commit$dirty"
  echo "built=$(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m), $(nvcc --version | tail -1)"
  echo "cuda_arch=$arch"
  echo "binaries=$(cd "$top/bin" && echo *)"
  echo "libraries=${#libs[@]}"
} > "$top/BUNDLE"

# Nothing may point at this machine: no absolute RUNPATH and no build-tree path in the scripts.
for f in "$top"/bin/* "$top"/lib/*.so* "$top"/lib/openmpi3/*.so "$top"/lib/pmix/*.so; do
  [ -f "$f" ] || continue
  rp=$(patchelf --print-rpath "$f")
  case "$rp" in '$ORIGIN' | '$ORIGIN/../lib' | '$ORIGIN/..') ;; *) die "$f: RUNPATH '$rp'" ;; esac
done

# ---- pack ----------------------------------------------------------------------------------------
mkdir -p "$out"
archive=$out/nn-gpu-bundle.tar.xz
tar -C "$stage" -cf - nn-gpu-bundle | xz -9 -T0 > "$archive.tmp"
mv "$archive.tmp" "$archive"
size=$(stat -c %s "$archive")
say "$(du -sh "$top" | cut -f1) unpacked ($(ls "$top/bin" | wc -l) binaries, ${#libs[@]} libraries), $((size / 1024 / 1024)) MiB packed, commit $commit$dirty"
[ "$size" -le "$limit" ] || die "$archive is $size bytes, over the 48 MiB limit"
echo "$archive"
