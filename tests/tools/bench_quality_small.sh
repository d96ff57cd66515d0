#!/usr/bin/env bash
# scripts/bench_quality.sh end to end on a tiny MovieLens-format ratings file (120 users with
# three tastes, 3 folds, 2 epochs): the held-out-user split, every row of the table (popularity,
# EASE, the PyTorch Mult-DAE/Mult-VAE, and the shipped networks through nn-generate, nn-train
# with validation users and nn-predict), the JSON records, and the rows asked for by name
# (RecVAE, VASP, the NumPy linear models, a warm-started network). Skipped (77) where /usr/bin/python3
# lacks NumPy, SciPy or PyTorch. The real runs and their numbers: docs/quality.md.
# Usage: bench_quality_small.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
if ! /usr/bin/python3 -c "import numpy, scipy, torch" 2>/dev/null; then
  echo "skipped: /usr/bin/python3 lacks numpy, scipy or torch"
  exit 77
fi
enter_work_dir
/usr/bin/python3 - <<'PY'
import random
rng = random.Random(11)
with open("ratings.csv", "w") as f:
    f.write("userId,movieId,rating,timestamp\n")
    for u in range(1, 121):
        taste = u % 3
        for m in range(1, 61):
            liked = (m - 1) // 20 == taste
            if rng.random() < (0.5 if liked else 0.08):
                f.write(f"{u},{m},{4.5 if liked else rng.choice([2.0, 4.0])},{1000 + m}\n")
PY
NN_TOOLS=$tools bash "$src/scripts/bench_quality.sh" ratings.csv -w bench --folds 3 \
  --nn-epochs 2 --nn-interval 1 --torch-epochs 2 --eval-every 1 --ease-lambdas 1,10 \
  --json records.jsonl >table.txt 2>progress.txt || fail "bench_quality.sh: $(tail -5 progress.txt)"
cat table.txt
for row in popularity ease mult-dae-torch mult-vae-torch nn-recommender-autoencoder nn-mult-dae \
  nn-mult-vae nn-linear-dae; do
  grep -Eq "^$row +([01]\.[0-9]{4} +){4}[0-9]+$" table.txt || fail "no row for $row: $(cat table.txt)"
done
[[ $(wc -l <records.jsonl) == 24 ]] || fail "expected 24 JSON records (3 folds x 8 rows)"
# The rows asked for by name: RecVAE, VASP, the NumPy linear models, and the deep-shallow config
# started from the DLAE's network.
extra=recvae-torch,vasp-torch,higher-order,dlae,dlae-tuned,rdlae,dlae-popularity,dlae-user-knn
extra+=,warm:recommender-linear-dae+recommender-deep-shallow
NN_TOOLS=$tools bash "$src/scripts/bench_quality.sh" ratings.csv -w bench --folds 3 \
  --methods $extra --torch-epochs 2 --eval-every 1 --recvae-gammas 0.005,0.02 \
  --vasp-lrs 0.001,0.0003 --nn-epochs 2 --nn-interval 1 \
  >extra.txt 2>extra-progress.txt || fail "bench_quality.sh --methods $extra: $(tail -5 extra-progress.txt)"
cat extra.txt
for row in ${extra//,/ }; do
  grep -Eq "^${row//+/\\+} +([01]\.[0-9]{4} +){4}[0-9]+$" extra.txt || fail "no row for $row: $(cat extra.txt)"
done
grep -q "recvae gamma 0.02: validation" extra-progress.txt || fail "RecVAE tried no gamma list"
grep -q "vasp lr 0.0003: validation" extra-progress.txt || fail "VASP tried no rate list"
# The warm row's network started from the fold's DLAE.
grep -q "^warm start from .*nn-recommender-linear-dae/network.nc" \
  bench/data/fold0/nn-recommender-deep-shallow/run.log || fail "the deep-shallow row was not warm-started"
# The tastes are easy: EASE and the DLAE find them.
awk '$1 == "dlae" && $2 < 0.5 { exit 1 }' extra.txt || fail "DLAE recall@10 below 0.5"
awk '$1 == "ease" && $2 < 0.5 { exit 1 }' table.txt || fail "EASE recall@10 below 0.5"
echo "bench_quality.sh: every row on the tiny data"
