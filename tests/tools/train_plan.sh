#!/usr/bin/env bash
# nn-train --plan N (docs/scaling.md, "Predicting scaling"): one process predicts the step and
# epoch on N ranks without writing anything (from a short profiled run, or the floors alone with
# --plan-steps 0, over a preset or a link file); the last line is the predicted epoch;
# a faster link never predicts a slower step; bad ranks and links are usage errors naming the
# choices.
# Usage: train_plan.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
plan=("$tools/nn-train" -c config.json -i input.nc -o output.nc -n net.nc -b 8 --backend cpu
  --threads 1)

"${plan[@]}" --plan 4 --link eth-1g 2>slow.log || fail "plan: $(tail -3 slow.log)"
[ ! -e net.nc ] || fail "--plan wrote the network"
grep -q '^plan for 4 ranks over eth-1g' slow.log || fail "no plan line: $(head -5 slow.log)"
grep -q "^  layer 'Hidden': " slow.log || fail "no rule line for Hidden: $(cat slow.log)"
last=$(tail -1 slow.log)
[[ $last =~ ^predicted\ epoch:\ ([0-9.]+)\ s\ on\ 4\ ranks\ \(1\ rank:\ ([0-9.]+)\ s\)$ ]] ||
  fail "last line: $last"
"${plan[@]}" --plan 4 --link nvlink-h100 2>fast.log || fail "plan: $(tail -3 fast.log)"
slow=$(sed -n 's/^predicted step: \([0-9.]*\) ms.*/\1/p' slow.log)
fast=$(sed -n 's/^predicted step: \([0-9.]*\) ms.*/\1/p' fast.log)
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f <= s) }' ||
  fail "NVLink predicted a slower step ($fast ms) than 1 Gbit/s Ethernet ($slow ms)"

# By default the compute is measured by a short profiled run (writing nothing); --plan-steps 0
# takes the floors alone.
grep -q '^compute measured: [0-9.]* ms per step in a profiled run of 30 steps' slow.log ||
  fail "not measured: $(sed -n 2,8p slow.log)"
"${plan[@]}" --plan 4 --link eth-1g --plan-steps 0 2>floors.log || fail "floors: $(tail -3 floors.log)"
grep -q '^compute from the floors at' floors.log || fail "floors: $(sed -n 2,8p floors.log)"
# A device that is not here: its peaks, scaled to its measured step; nothing is timed.
"${plan[@]}" --plan 8 --link nvlink-h100 --plan-device h100-sxm --plan-step-ms 2 2>gpu.log ||
  fail "device: $(tail -3 gpu.log)"
grep -q '^compute from the floors at 47600.0 GFLOP/s .* (a measured one-rank step of 2.000 ms)' \
  gpu.log || fail "device: $(sed -n 1,4p gpu.log)"
grep -q '1 rank: 2.000 ms' gpu.log || fail "device step: $(grep 'predicted step' gpu.log)"
! grep -q 'plan: timing' gpu.log || fail "a device plan timed steps here"
status=0
"${plan[@]}" --plan 8 --plan-step-ms 2 2>nodev.log || status=$?
[ "$status" = 2 ] || fail "--plan-step-ms without a device: status $status"
# A link file as --measure-link writes it; a broken one is named with what is wrong.
cat >link.json <<'JSON'
{ "format": "nn-link", "version": 1, "latency_s": 2e-4, "bytes_per_s": 1.2e8, "ranks": 2,
  "source": "by hand" }
JSON
"${plan[@]}" --plan 2 --link link.json 2>file.log || fail "link file: $(tail -3 file.log)"
grep -q '^plan for 2 ranks over link.json (measured) (0.12 GB/s bus bandwidth, 200.0 us per hop' \
  file.log || fail "link file: $(head -6 file.log)"
sed -i 's/"bytes_per_s": 1.2e8/"bytes_per_s": 0/' link.json
status=0
"${plan[@]}" --plan 2 --link link.json 2>badfile.log || status=$?
[ "$status" = 2 ] && grep -q 'link.json: bytes_per_s: must be positive' badfile.log ||
  fail "bad link file: status $status, $(cat badfile.log)"

status=0
"${plan[@]}" --plan 4 --link carrier-pigeon 2>bad.log || status=$?
[ "$status" = 2 ] || fail "unknown link: exit status $status"
grep -q 'eth-10g' bad.log || fail "unknown link: the choices are not listed: $(cat bad.log)"
status=0
"${plan[@]}" --plan 0 2>zero.log || status=$?
[ "$status" = 2 ] || fail "--plan 0: exit status $status"
echo "train_plan: ok ($last)"
