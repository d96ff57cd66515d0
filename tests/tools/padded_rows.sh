#!/usr/bin/env bash
# Padded rows at tool level (docs/performance.md, "Padded rows"), on the CPU told to pad
# (NN_CPU_ROW_ALIGN=8, as the CUDA backend does by default): with 18 items (widths not rounded
# up: nn-generate --align 1) the output layer holds rows of 24 floats. nn-train says so and
# trains to the losses of the unpadded run (within float rounding); its network file holds the
# unpadded sizes; nn-predict gives the same recommendations, scores, dumps and column-block
# rankings padded and unpadded; nn-train --validate passes padded.
# Usage: padded_rows.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir
unset NN_CPU_ROW_ALIGN  # the unpadded runs must be unpadded
command -v ncdump >/dev/null || fail "needs ncdump (netcdf-bin)"

tiny_ratings
"$tools/nn-generate" -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c \
  --align 1 2>/dev/null
"$tools/nn-generate" -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx \
  --align 1 2>/dev/null
tiny_config 8 Tanh
train=("$tools/nn-train" -c config.json -i input.nc -o output.nc -b 8 -e 4 -alpha 0.1
  --optimizer RMSProp --checkpoint-interval 0 --seed 3)

NN_CPU_ROW_ALIGN=8 "${train[@]}" -n padded.nc 2>padded.log || fail "padded training: $(tail -3 padded.log)"
"${train[@]}" -n plain.nc 2>plain.log || fail "plain training: $(tail -3 plain.log)"
grep -q "rows padded: layer 'Output' holds its 18 units in rows of 24 floats (row alignment 8)" \
  padded.log || fail "the padded log does not say so: $(cat padded.log)"
! grep -q "rows padded" plain.log || fail "the unpadded run says it padded"
# The same parameter count (the padding is not counted) and losses within 1e-5 relative.
count() { grep -o '[0-9]* parameters' "$1" | head -1; }
[[ "$(count padded.log)" == "$(count plain.log)" ]] ||
  fail "parameter counts differ: $(count padded.log) and $(count plain.log)"
losses() { grep -o 'loss [0-9.e+-]*' "$1" | awk '{ print $2 }'; }
[[ $(losses plain.log | wc -l) -ge 4 ]] || fail "no epoch losses in: $(cat plain.log)"
paste <(losses padded.log) <(losses plain.log) |
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * $2 + 1e-9) { print; exit 1 } }' ||
  fail "padded and unpadded losses differ"
# The file holds the unpadded matrix: 8 x 18 output weights.
for f in padded.nc plain.nc; do
  ncdump -h "$f" | sed -n '/dimensions:/,/variables:/p' | grep -v 'time\|UNLIMITED' >"$f.dims"
done
cmp -s padded.nc.dims plain.nc.dims || fail "the files' dimensions differ: $(diff padded.nc.dims plain.nc.dims)"

# Prediction with the padded network, padded and not: the same rankings and scores.
predict=("$tools/nn-predict" -n padded.nc -r ratings.txt -i features.idx -o features.idx -k 5 -p .5f)
NN_CPU_ROW_ALIGN=8 "${predict[@]}" -s recs-padded.txt --dump dump-padded.txt 2>/dev/null
"${predict[@]}" -s recs-plain.txt --dump dump-plain.txt 2>/dev/null
cmp -s recs-padded.txt recs-plain.txt || fail "recommendations differ: $(diff recs-padded.txt recs-plain.txt | head -5)"
[[ $(wc -l <recs-plain.txt) == 30 ]] || fail "expected 30 recommendation lines"
paste <(cut -f2 dump-padded.txt | tr ',' '\n') <(cut -f2 dump-plain.txt | tr ',' '\n') |
  awk '{ n++; d = $1 - $2; if (d < -1e-6 || d > 1e-6) exit 1 } END { if (n != 30 * 18) exit 1 }' ||
  fail "the dumped output layers differ (or are not 30 x 18 values)"
# Column blocks of 8 (tiles of the padded matrix's rows) rank as the whole layer does.
NN_CPU_ROW_ALIGN=8 "${predict[@]}" --score-block 8 -s recs-blocks.txt 2>/dev/null
cmp -s recs-blocks.txt recs-plain.txt || fail "--score-block 8 changed the recommendations"

# The gradient check passes with the rows padded.
NN_CPU_ROW_ALIGN=8 "$tools/nn-train" --validate -c config.json -i input.nc -o output.nc -b 8 \
  >validate.log 2>&1 || fail "nn-train --validate padded: $(tail -5 validate.log)"
echo "padded_rows: OK"
