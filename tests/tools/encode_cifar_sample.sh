#!/usr/bin/env bash
# The CIFAR-10 sample end to end on CIFAR-format files generated here (the real CIFAR-10 cannot
# be downloaded on the build machines): samples/cifar-10/run.sh encodes five training batches and
# a test batch with nn-encode, trains the sample's convolutional network (config.json, train.cdl
# with fewer epochs), predicts the test images and reports accuracy. The generated classes are
# easy (each has its own colour and stripe direction, plus noise), so the network must beat
# chance (10%) by far.
# Usage: bash encode_cifar_sample.sh <tool-dir> <source-dir>
set -euo pipefail

tools=$(realpath "$1")
src=$(realpath "$2")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
enter_work_dir

mkdir data
python3 - <<'PY'
import random
random.seed(11)
# Class k: base colour PALETTE[k]; classes 0-4 have horizontal stripes, 5-9 vertical ones.
PALETTE = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40), (200, 40, 200),
           (40, 200, 200), (220, 120, 40), (120, 40, 220), (120, 120, 120), (230, 230, 230)]
def record(k):
    planes = []
    for c in range(3):
        plane = bytearray()
        for y in range(32):
            for x in range(32):
                stripe = (y if k < 5 else x) // 4 % 2
                v = PALETTE[k][c] + (30 if stripe else -30) + random.randint(-40, 40)
                plane.append(max(0, min(255, v)))
        planes.append(bytes(plane))
    return bytes([k]) + b"".join(planes)
def batch(name, n):
    with open(f"data/{name}.bin", "wb") as f:
        for _ in range(n):
            f.write(record(random.randrange(10)))
for b in range(1, 6):
    batch(f"data_batch_{b}", 120)
batch("test_batch", 200)
PY

NN_TOOLS=$tools NN_EPOCHS=2 bash "$src/samples/cifar-10/run.sh" data out >run.log 2>&1 ||
  fail "run.sh: $(tail -20 run.log)"
grep -q 'wrote .*train.nc: 600 images 32x32x3, 10 classes' run.log || fail "encode: $(cat run.log)"
grep -q 'epoch 2/2' run.log || fail "training did not run 2 epochs: $(cat run.log)"
[[ $(wc -l <out/predictions) == 200 ]] || fail "expected 200 predictions"
head -1 out/predictions | grep -Eq '^0	(airplane|automobile|bird|cat|deer|dog|frog|horse|ship|truck),[0-9.]+:$' ||
  fail "prediction line: $(head -1 out/predictions)"
acc=$(awk '/^accuracy/ {print $2}' out/accuracy.txt)
echo "encode_cifar_sample: accuracy $acc on 200 generated test images"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.8) }' || fail "accuracy $acc below 0.8: $(cat run.log)"
