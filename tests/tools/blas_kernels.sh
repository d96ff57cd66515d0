#!/usr/bin/env bash
# The tools restart themselves with OPENBLAS_CORETYPE when OpenBLAS chose kernels older than the
# CPU (a CPU newer than the library: docs/performance.md, "OpenBLAS kernels"): nn-train's log
# names the kernels and never says they are older than the CPU; a user's OPENBLAS_CORETYPE is
# kept as given (Prescott's kernels then run, without advice against that choice). A restarted
# tool keeps its name: ps, pgrep and pkill find nn-serve as nn-serve, not as "exe".
# Usage: blas_kernels.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -e 1 -b 8 --seed 5 --backend cpu
  --threads 1)

env -u OPENBLAS_CORETYPE "${train[@]}" -n auto.nc 2>auto.log || fail "run: $(tail -3 auto.log)"
line=$(grep '^cpu backend: OpenBLAS ' auto.log) || fail "no kernels line: $(head -5 auto.log)"
case "$line" in
  *"older than this CPU"*) fail "the tool did not restart with the CPU's kernels: $line" ;;
esac

OPENBLAS_CORETYPE=Prescott "${train[@]}" -n prescott.nc 2>prescott.log ||
  fail "run with Prescott: $(tail -3 prescott.log)"
grep -q '^cpu backend: OpenBLAS Prescott kernels' prescott.log ||
  fail "the user's OPENBLAS_CORETYPE was not kept: $(grep 'cpu backend' prescott.log)"
grep -q '^cpu backend: OpenBLAS Prescott kernels$' prescott.log ||
  fail "advice against the user's own choice: $(grep 'cpu backend' prescott.log)"
# The name the kernel gives the restarted process is the tool's. NN_TEST_BLAS_RESTART makes the
# tool restart on any CPU (here OpenBLAS may have chosen the CPU's own kernels).
env -u OPENBLAS_CORETYPE NN_TEST_BLAS_RESTART=Haswell "$tools/nn-serve" -n auto.nc --port 0 \
  --threads 1 2>serve.log &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 200); do grep -q "listening on" serve.log 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" serve.log || fail "nn-serve did not start: $(cat serve.log)"
tr '\0' '\n' </proc/$server/environ | grep -qx OPENBLAS_CORETYPE=Haswell ||
  fail "nn-serve did not restart itself with NN_TEST_BLAS_RESTART=Haswell"
name=$(ps -o comm= -p "$server") || fail "no process $server"
[[ $name == nn-serve ]] || fail "the running nn-serve is named '$name' in ps"
pgrep -x nn-serve >pids.txt || fail "pgrep -x nn-serve found nothing (ps: $name)"
grep -qx "$server" pids.txt || fail "pgrep -x nn-serve: $(cat pids.txt), not $server"
pkill -TERM -x nn-serve -P $$ || fail "pkill -x nn-serve -P $$ signalled nothing"
status=0
wait "$server" || status=$?
[[ $status == 0 ]] || fail "nn-serve stopped by pkill exited $status: $(tail -3 serve.log)"
echo "blas_kernels: ok ($line; restarted tools keep their names)"
