#!/bin/sh
# Builds and runs scripts/bench_gather.cpp (sparse minibatch gathering) against a build directory.
# Usage: scripts/bench_gather.sh [build-dir]
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
g++ -O3 -march=native -std=c++17 -I"$root/src/engine" "$root/scripts/bench_gather.cpp" \
  "$build/src/engine/libnn_data.a" "$build/src/engine/libnn_core.a" \
  $(pkg-config --libs netcdf-cxx4 netcdf hdf5 zlib 2>/dev/null || echo -lnetcdf_c++4 -lnetcdf -lz) \
  -o "$build/bench_gather"
"$build/bench_gather"
