#!/bin/sh
# Runs the CPU kernel benchmark (scripts/bench/bench_kernels.cpp, built by CMake as
# <build>/bench/nn-bench-kernels; scripts/setup.sh builds it when it is missing).
# Usage: scripts/bench_kernels.sh [build-dir] [threads] [reps]
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib/blas_kernels.sh"  # the CPU's own OpenBLAS kernels
build=${1:-${NN_BUILD_DIR:-$root/build}}
[ -x "$build/bench/nn-bench-kernels" ] || NN_BUILD_DIR=$build bash "$root/scripts/setup.sh" nn-bench-kernels
"$build/bench/nn-bench-kernels" "${2:-0}" "${3:-10}"
