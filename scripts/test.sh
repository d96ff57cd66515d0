#!/usr/bin/env bash
# Builds everything (setup.sh all: the tools, tests, benchmarks and Python module) and runs the
# whole test suite: unit tests, tool pipeline tests and the 2-process MPI tests. CUDA tests skip
# with a message when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
ctest --test-dir "${NN_BUILD_DIR:-build}" --output-on-failure -j2 "$@"
