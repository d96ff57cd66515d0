# Tiny data for the networks on the configs/ shelf, one recipe per kind of network (sourced
# after common.sh; needs $tools and $src): recommender_data, linear_dae_start, idx_images,
# cifar_images, pair_data, and config_data NAME, which runs the recipe for configs/NAME in the
# current directory.

recommender_data() {
  tiny_ratings
  tiny_datasets "$tools"
}
linear_dae_start() {  # linear-dae.nc: configs/recommender-linear-dae trained on the same data
  mkdir dlae
  cp "$src/configs/recommender-linear-dae/network.json" "$src/configs/recommender-linear-dae/train.cdl" dlae/
  ln -s ../input.nc ../output.nc dlae/
  (cd dlae && "$tools/nn-train" train.cdl >train.log 2>&1) || fail "linear-dae.nc: $(tail -5 dlae/train.log)"
  mv dlae/network.nc linear-dae.nc
}
idx_images() {  # 28x28 grey images, 24 for training and 8 for testing, IDX format
  python3 - <<'PY'
import random, struct
random.seed(3)
def write(prefix, n):
    labels = [random.randrange(10) for _ in range(n)]
    with open(prefix + "-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        for k in labels:
            f.write(bytes(min(255, 25 * k + random.randrange(30)) for _ in range(784)))
    with open(prefix + "-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(labels))
write("train", 24)
write("t10k", 8)
PY
  "$tools/nn-encode" idx -i train-images-idx3-ubyte -l train-labels-idx1-ubyte -o train.nc 2>/dev/null
  "$tools/nn-encode" idx -i t10k-images-idx3-ubyte -l t10k-labels-idx1-ubyte -o test.nc 2>/dev/null
}
cifar_images() {  # 32x32x3 CIFAR-10 binary records, 16 for training and 8 for testing
  python3 - <<'PY'
import random
random.seed(4)
def write(name, n):
    with open(name, "wb") as f:
        for _ in range(n):
            k = random.randrange(10)
            f.write(bytes([k]) + bytes(min(255, 20 * k + random.randrange(40)) for _ in range(3072)))
write("train.bin", 16)
write("test.bin", 8)
PY
  "$tools/nn-encode" cifar10 -i train.bin -o train.nc 2>/dev/null
  "$tools/nn-encode" cifar10 -i test.bin -o test.nc 2>/dev/null
}
pair_data() {  # query/candidate word sets and a similarity of 1 (same topic) or 0
  awk 'BEGIN { for (p = 0; p < 32; p++) { t = p % 4; s = (p % 3 != 0) ? t : (t + 1) % 4;
         print "p" p "\tw" t*4 ":w" t*4+1 ":w" t*4+2 >"query.txt";
         print "p" p "\tw" s*4+1 ":w" s*4+2 ":w" s*4+3 >"candidate.txt";
         print "p" p "\ts," (s == t ? 1 : 0) >"similarity.txt" }
         for (w = 0; w < 16; w++) printf "%s", (w ? ":" : "vocab\t") "w" w >"vocab.txt"; print "" >"vocab.txt" }'
  "$tools/nn-generate" -d vocab -i vocab.txt -o vocab.nc -f words.idx -s vocab.idx -c 2>/dev/null
  "$tools/nn-generate" -d query -i query.txt -o query.nc -f words.idx -s pairs.idx 2>/dev/null
  "$tools/nn-generate" -d candidate -i candidate.txt -o candidate.nc -f words.idx -s pairs.idx 2>/dev/null
  "$tools/nn-generate" -d similarity -t analog --align 1 -i similarity.txt -o similarity.nc \
    -f similarity.idx -s pairs.idx -c 2>/dev/null
}

# config_data NAME: the recipe for configs/NAME; fails for a folder without one.
config_data() {
  case $1 in
    recommender-deep-shallow) recommender_data && linear_dae_start ;;
    recommender-*) recommender_data ;;
    image-*-28x28) idx_images ;;
    image-cnn-cifar10) cifar_images ;;
    two-tower-similarity) pair_data ;;
    *) fail "configs/$1: no tiny-data recipe in tests/tools/lib/config_data.sh" ;;
  esac
}
