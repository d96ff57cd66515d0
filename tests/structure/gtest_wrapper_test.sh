#!/usr/bin/env bash
# The wrapper of whole-binary CTest entries (tests/support/gtest_wrapper.sh): all skipped -> 77,
# some passed -> 0, a failing run keeps its status; summaries of two ranks are added up.
set -u
wrapper=$(dirname "$0")/../support/gtest_wrapper.sh
fail=0
expect() { # expect STATUS NAME SCRIPT
  bash "$wrapper" bash -c "$3" > /dev/null 2>&1
  local rc=$?
  if [ "$rc" != "$1" ]; then echo "FAIL $2: exit $rc, expected $1"; fail=1; else echo "ok   $2"; fi
}
expect 77 "all skipped" 'printf "[  PASSED  ] 0 tests.\n[  SKIPPED ] 3 tests, listed below:\n"'
expect 77 "all skipped on two ranks" 'printf "[  PASSED  ] 0 tests.\n[  SKIPPED ] 3 tests, listed below:\n[  PASSED  ] 0 tests.\n[  SKIPPED ] 3 tests, listed below:\n"'
expect 0 "some passed" 'printf "[  PASSED  ] 2 tests.\n[  SKIPPED ] 1 test, listed below:\n"'
expect 0 "one rank passed" 'printf "[  PASSED  ] 0 tests.\n[  SKIPPED ] 3 tests, listed below:\n[  PASSED  ] 3 tests.\n"'
expect 0 "none skipped" 'printf "[  PASSED  ] 5 tests.\n"'
expect 1 "failure kept" 'printf "[  PASSED  ] 0 tests.\n[  SKIPPED ] 3 tests, listed below:\n"; exit 1'
exit $fail
