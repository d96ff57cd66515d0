#!/bin/sh
# Builds and runs scripts/bench_kernels.cpp against a build directory's nn_backend.
# Usage: scripts/bench_kernels.sh [build-dir] [threads] [reps]
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
g++ -O3 -march=native -fopenmp -std=c++17 -I"$root/src/engine" "$root/scripts/bench_kernels.cpp" \
  "$build/src/engine/libnn_backend.a" "$build/src/engine/libnn_core.a" -lopenblas \
  -o "$build/bench_kernels"
"$build/bench_kernels" "${2:-0}" "${3:-10}"
