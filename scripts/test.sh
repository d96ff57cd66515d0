#!/usr/bin/env bash
# Builds everything (setup.sh all: the tools, tests, benchmarks and Python module) and runs the
# whole test suite: unit tests, tool pipeline tests and the 2-process MPI tests. CUDA tests skip
# with a message when no GPU is present; the run ends with why each skipped test skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
build=${NN_BUILD_DIR:-build}
summary=$build/Testing/ctest-output.txt
mkdir -p "$build/Testing"
set +e
ctest --test-dir "$build" --output-on-failure -j2 "$@" | tee "$summary"
rc=${PIPESTATUS[0]}
set -e
# Last, why each skipped test skipped (from the tests' own output): on a fresh machine this says
# what could not run there.
python3 scripts/lib/skip_reasons.py "$summary" "$build/Testing/Temporary/LastTest.log" || true
exit "$rc"
