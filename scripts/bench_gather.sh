#!/bin/sh
# Runs the sparse minibatch gathering benchmark (scripts/bench/bench_gather.cpp, built by CMake
# as <build>/bench/nn-bench-gather; scripts/setup.sh builds it when it is missing).
# Usage: scripts/bench_gather.sh [build-dir]
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib/blas_kernels.sh"  # the CPU's own OpenBLAS kernels
build=${1:-${NN_BUILD_DIR:-$root/build}}
[ -x "$build/bench/nn-bench-gather" ] || NN_BUILD_DIR=$build bash "$root/scripts/setup.sh" nn-bench-gather
"$build/bench/nn-bench-gather"
