#!/usr/bin/env bash
# MovieLens end to end: ratings CSV -> NetCDF datasets (nn-generate --rows) -> trained recommender
# -> top-10 unseen movies per user in DSSTNE's recs format (<output-dir>/recs).
# Usage: samples/movielens/run.sh [ratings.csv] [output-dir]
#   ratings.csv  MovieLens userId,movieId,rating,timestamp (default: the bundled ml-latest-small)
#   output-dir   where everything is written (default: samples/movielens/work)
# NN_TOOLS overrides the directory holding nn-generate/nn-train/nn-predict (default: build/src/tools,
# built by scripts/setup.sh when missing). NN_LAUNCH runs training and prediction under a launcher,
# e.g. NN_LAUNCH="mpirun -np 2" (docs/scaling.md). NN_CONFIG names another recommender of configs/
# (default recommender-linear-dae, the best recall on this data, solved in closed form in one
# process: with NN_LAUNCH the default is recommender-autoencoder, which trains on several; e.g.
# recommender-mult-dae, docs/quality.md). NN_PRECISION=bf16 trains and predicts with BF16
# products (docs/wide-outputs.md, "BF16 arithmetic").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ratings=$(realpath "${1:-$here/ratings.csv}")
out=${2:-$here/work}
tools=${NN_TOOLS:-$root/build/src/tools}
if [ ! -x "$tools/nn-train" ] || [ ! -x "$tools/nn-predict" ] || [ ! -x "$tools/nn-generate" ]; then
  bash "$root/scripts/setup.sh"
fi
mkdir -p "$out"
out=$(realpath "$out")
begin=$SECONDS
took() { echo "($((SECONDS - begin)) s so far)"; }
cd "$out"
echo "== generating datasets from $ratings (one row per rating: nn-generate --rows)"
rm -f features.idx samples.idx
# MovieLens files start with a userId,movieId,... header; a headerless copy starts with a digit.
header=(--header)
head -1 "$ratings" | grep -q '^[0-9]' && header=()
"$tools/nn-generate" -d input -i "$ratings" --rows "${header[@]}" -o input.nc -f features.idx \
  -s samples.idx -c
"$tools/nn-generate" -d output -i "$ratings" --rows "${header[@]}" -o output.nc -f features.idx \
  -s samples.idx
# The prediction's Filter (every recommender config's predict.cdl) is input.nc itself: row e of a
# dataset filter removes example e's own movies from its recommendations.
# The network and its commands come from the shelf of ready configs.
default_config=recommender-linear-dae
[ -n "${NN_LAUNCH:-}" ] && default_config=recommender-autoencoder
config=${NN_CONFIG:-$default_config}
[ -f "$root/configs/$config/network.json" ] || { echo "run.sh: no configs/$config/network.json" >&2; exit 2; }
cp "$root/configs/$config/"{network.json,train.cdl,predict.cdl} .
echo "== training configs/$config (live progress; per-epoch log in network.epochs.jsonl) $(took)"
rm -f checkpoint*.nc network.nc
precision=()
[ -n "${NN_PRECISION:-}" ] && precision=(--precision "$NN_PRECISION")
${NN_LAUNCH:-} "$tools/nn-train" train.cdl "${precision[@]}" 2>&1
echo "== recommending (top 10 unseen movies per user) $(took)"
${NN_LAUNCH:-} "$tools/nn-predict" predict.cdl "${precision[@]}"
echo "== $(wc -l < recs) users written to $out/recs $(took); the first three:"
movies="$(dirname "$ratings")/movies.csv"
[ -f "$movies" ] || movies="$here/movies.csv"
python3 - "$movies" <<'PY'
import csv, sys
titles = {}
try:
    with open(sys.argv[1], newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if row and row[0].isdigit():
                titles[row[0]] = row[1]
except OSError:
    pass
with open("recs") as f:
    for line, _ in zip(f, range(3)):
        user, rest = line.rstrip("\n").split("\t")
        print(f"user {user}:")
        for item in filter(None, rest.split(":")):
            movie, score = item.split(",")
            print(f"  {score}  {titles.get(movie, 'movie ' + movie)}")
PY
