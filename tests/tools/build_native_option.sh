#!/usr/bin/env bash
# NN_NATIVE (README "Portable binaries"): -march=native is on the compile lines exactly when the
# option is on, so -DNN_NATIVE=OFF builds binaries that run on other machines of the family.
# Configures the project (tools only, no CUDA/MPI/tests) into a scratch directory.
# Usage: build_native_option.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
build=$(realpath "$tools/../..")
# native_flags DIR: the -march=native occurrences in the C++ compile flags of the tools.
# (Ninja keeps the flags in build.ninja, Make in each target's flags.make.)
native_flags() {
  if [[ -f $1/build.ninja ]]; then
    ninja -C "$1" -t commands nn-train | grep -c -- '-march=native' || true
  else
    grep -c -- '-march=native' "$1"/src/tools/CMakeFiles/nn-train.dir/flags.make || true
  fi
}

cmake -S "$2" -B off -DNN_NATIVE=OFF -DNN_ENABLE_CUDA=OFF -DNN_ENABLE_MPI=OFF -DNN_BUILD_TESTS=OFF \
  -DNN_BUILD_BENCHMARKS=OFF >configure.log 2>&1 || fail "configure with NN_NATIVE=OFF: $(tail configure.log)"
[[ $(native_flags off) == 0 ]] || fail "NN_NATIVE=OFF still compiles with -march=native"
# The build under test says which way it was configured; its flags must follow.
if grep -q '^NN_NATIVE:BOOL=ON' "$build/CMakeCache.txt" && grep -q '^NN_HAS_MARCH_NATIVE:INTERNAL=1' "$build/CMakeCache.txt"; then
  [[ $(native_flags "$build") != 0 ]] || fail "NN_NATIVE=ON but no -march=native in $build"
else
  [[ $(native_flags "$build") == 0 ]] || fail "NN_NATIVE off but -march=native in $build"
fi
echo "build_native_option: all checks passed"
