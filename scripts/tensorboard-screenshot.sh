#!/usr/bin/env bash
# The picture of docs/monitoring.md: trains the tutorial's MovieLens recommender (docs/tutorial.md,
# steps 1-5: every tenth user held out, configs/recommender-autoencoder, 80 epochs) with
# `--tensorboard <work>/runs/movielens --tensorboard-interval 10`, starts TensorBoard on loopback
# and has a headless Chromium photograph its scalars page. Not part of CI or the test suite.
# Usage: scripts/tensorboard-screenshot.sh [PNG] (default docs/images/tensorboard-scalars.png)
# Needs: the tools (built by scripts/setup.sh when missing; NN_TOOLS overrides where they are),
# a Python with the tensorboard package ($NN_TENSORBOARD_PYTHON, else <build>/tensorboard-venv,
# else python3) and Debian's chromium (or $NN_CHROMIUM). NN_SCREENSHOT_WORK keeps the run there
# instead of in a scratch directory removed at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
png=$(realpath -m "${1:-$root/docs/images/tensorboard-scalars.png}")
build=${NN_BUILD_DIR:-$root/build}
tools=${NN_TOOLS:-$build/src/tools}
[ -x "$tools/nn-train" ] || bash "$root/scripts/setup.sh"
python=""
for p in "${NN_TENSORBOARD_PYTHON:-}" "$build/tensorboard-venv/bin/python" python3; do
  if [ -n "$p" ] && "$p" -c 'import tensorboard' 2>/dev/null; then python=$p; break; fi
done
[ -n "$python" ] || { echo "tensorboard-screenshot: no Python with tensorboard (pip install tensorboard in a venv; NN_TENSORBOARD_PYTHON)" >&2; exit 2; }
chromium=${NN_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || { echo "tensorboard-screenshot: no chromium (apt-get install chromium)" >&2; exit 2; }

work=${NN_SCREENSHOT_WORK:-$(mktemp -d)}
mkdir -p "$work"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  [ -z "${NN_SCREENSHOT_WORK:-}" ] && rm -rf "$work"
  return 0
}
trap cleanup EXIT
cd "$work"

echo "== training the tutorial's recommender in $work"
awk -F, 'NR > 1 { items[$1] = items[$1] (items[$1] == "" ? "" : ":") $2 }
     END { for (u in items) print u "\t" items[u] }' "$root/samples/movielens/ratings.csv" |
  sort -n >all.txt
awk -F'\t' '$1 % 10 != 0' all.txt >ratings.txt
awk -F'\t' '$1 % 10 == 0 { n = split($2, it, ":"); a = b = ""
    for (i = 1; i <= n; i++) if (i % 5) a = a (a == "" ? "" : ":") it[i]; else b = b (b == "" ? "" : ":") it[i]
    print $1 "\t" a > "val_in.txt"; print $1 "\t" b > "val_out.txt" }' all.txt
"$tools/nn-generate" -q -d input -i ratings.txt -o input.nc -f features.idx -s samples.idx -c
"$tools/nn-generate" -q -d output -i ratings.txt -o output.nc -f features.idx -s samples.idx
"$tools/nn-generate" -q -d input -i val_in.txt -o val_input.nc -f features.idx -s val_samples.idx
"$tools/nn-generate" -q -d output -i val_out.txt -o val_output.nc -f features.idx -s val_samples.idx
cp "$root/configs/recommender-autoencoder/"{network.json,train.cdl} .
rm -rf runs
"$tools/nn-train" -q train.cdl --validation val_input.nc --validation val_output.nc \
  --validation-interval 5 --tensorboard runs/movielens --tensorboard-interval 10

echo "== TensorBoard on 127.0.0.1"
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
tensorboard=$(dirname "$python")/tensorboard
[ -x "$tensorboard" ] || tensorboard=tensorboard
"$tensorboard" --logdir runs --host 127.0.0.1 --port "$port" >tensorboard.log 2>&1 &
server=$!
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$port/data/runs" | grep -q movielens && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/data/runs" | grep -q movielens ||
  { cat tensorboard.log >&2; echo "tensorboard-screenshot: TensorBoard did not come up" >&2; exit 1; }

echo "== headless Chromium: the scalars page"
mkdir -p "$(dirname "$png")"
# The legacy scalars dashboard, its tags filtered to the loss, the main validation metric and the
# minibatch loss; the virtual time budget lets the page fetch and draw its charts first.
url="http://127.0.0.1:$port/?darkMode=false#scalars&tagFilter=train%2Floss%7Cvalidation%2Frecall%7Cminibatch%2Floss&_smoothingWeight=0"
"$chromium" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
  --virtual-time-budget=20000 --user-data-dir="$work/chromium-profile" --screenshot="$png" "$url" \
  >chromium.log 2>&1 || { cat chromium.log >&2; exit 1; }
[ -s "$png" ] || { cat chromium.log >&2; echo "tensorboard-screenshot: no picture" >&2; exit 1; }
echo "== wrote $png"
