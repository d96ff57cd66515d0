#!/usr/bin/env bash
# The retraining recipe (samples/movielens/retrain_daily.py, docs/retraining.md) on a reduced
# MovieLens: 80 users, a few epochs, 120 requests. Day 1 trains, day 2 (indexed afresh, with new
# users and movies) is warm-started and retrained, both are measured, and nn-serve swaps the
# networks three times under requests with none failing and every answer from one catalog.
# Usage: retraining_recipe.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source_dir=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
enter_work_dir
NN_TOOLS=$tools timeout 600 python3 "$source_dir/samples/movielens/retrain_daily.py" \
  --work "$work/recipe" --users 80 --full-epochs 4 --warm-epochs 2 --requests 120 >out.txt 2>&1 ||
  fail "the recipe failed: $(tail -20 out.txt)"
grep -q "^  warm start: layer 'Input': [0-9]* items kept, [1-9][0-9]* added, 0 dropped" out.txt ||
  fail "no per-layer warm start line: $(cat out.txt)"
grep -q "^day 2 warm start: *2 epochs in .*recall@10 0\.[0-9]*" out.txt || fail "$(cat out.txt)"
grep -q "^day 2 full retrain: 4 epochs in .*recall@10 0\.[0-9]*" out.txt || fail "$(cat out.txt)"
grep -q "^nn-serve: 120 requests over 3 swaps, 0 failed, 0 answers outside their version's catalog; new movie known at once: True; reloads 3, reload failures 0$" out.txt ||
  fail "$(cat out.txt)"
echo "recipe: all checks passed"
