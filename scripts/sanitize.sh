#!/usr/bin/env bash
# Builds the engine, tools and unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (no
# CUDA, no MPI, no -march=native; build dir build-asan/ unless NN_ASAN_BUILD_DIR is set) and runs
# the test suite with every sanitizer report fatal (-fno-sanitize-recover, halt_on_error).
# Usage: scripts/sanitize.sh [extra ctest arguments]   (.ci/run calls it after scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${NN_ASAN_BUILD_DIR:-build-asan}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
start=$(date +%s)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNN_ENABLE_CUDA=OFF -DNN_ENABLE_MPI=OFF \
  -DNN_NATIVE=OFF -DNN_BUILD_PYTHON=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$(date +%s)
# detect_leaks=0: OpenMP/OpenBLAS/HDF5 keep process-lifetime allocations that LSan would flag.
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=0:detect_odr_violation=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -LE mpi "$@"  # MPI is not built here
echo "sanitize: build $((built - start)) s, tests $(($(date +%s) - built)) s"
