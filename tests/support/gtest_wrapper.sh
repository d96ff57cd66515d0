#!/usr/bin/env bash
# Runs a GoogleTest program (directly, or under mpirun with several ranks) for a CTest entry that
# wraps a whole test binary, and turns "every test skipped" into CTest's skip code instead of a
# pass: a run in which no test passed and some were skipped (no GPU, too few GPUs for the ranks)
# proved nothing. Colour is off so the summary lines can be read under mpirun too.
# Usage: gtest_wrapper.sh COMMAND [ARGS...]   (exit 77 = skipped; CTest: SKIP_RETURN_CODE 77)
set -uo pipefail
export GTEST_COLOR=no
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || exit "$rc"
# Each rank prints its own summary: "[  PASSED  ] N tests." and "[  SKIPPED ] M tests, listed below:".
passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?, listed below.*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
if [ "$passed" -eq 0 ] && [ "$skipped" -gt 0 ]; then
  echo "gtest_wrapper: every test was skipped ($skipped): reporting the entry as skipped"
  exit 77
fi
exit 0
