# The two networks the ONNX tests export (sourced by export_onnx.sh and export_onnxruntime.sh,
# inside the work dir, with $tools and $src set): the MovieLens autoencoder
# (configs/recommender-autoencoder) trained 2 epochs on the bundled ratings, and the Fashion-MNIST
# CNN (configs/image-cnn-28x28: convolutions, max pooling, ReLU, SoftMax) trained 1 epoch on 300
# images. For each, nn-predict's activations of the output layer (and the CNN's input layer, the
# images as the engine sees them) are dumped as text (%.7g), and nn-export writes the model:
#   ml.onnx   ml_x.txt (examples, sample<TAB>movie:movie...)  ml_out.txt
#   cnn.onnx  cnn_in.txt  cnn_out.txt
data=${NN_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
ratings="$src/samples/movielens/ratings.csv"

"$tools/nn-generate" -d input -i "$ratings" --rows --header -o input.nc -f features.idx \
  -s samples.idx -c 2>/dev/null
"$tools/nn-generate" -d output -i "$ratings" --rows --header -o output.nc -f features.idx \
  -s samples.idx 2>/dev/null
cp "$src/configs/recommender-autoencoder/network.json" ml.json
cat >ml.cdl <<'JSON'
{ "Network": "ml.json", "Command": "Train", "RandomSeed": 12345, "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 2, "MiniBatch": 32, "Optimizer": "RMSProp", "Alpha": 0.001,
    "mu": 0.99, "Lambda": 0.001, "CheckpointInterval": 0, "Results": "ml.nc" } }
JSON
"$tools/nn-train" -q ml.cdl || fail "MovieLens training failed"
# The first 64 users' movies as text examples.
awk -F, 'NR > 1 { if (!($1 in seen)) { order[++n] = $1; seen[$1] = 1 } items[$1] = items[$1] \
  (items[$1] == "" ? "" : ":") $2 } END { for (i = 1; i <= 64; i++) print order[i] "\t" items[order[i]] }' \
  "$ratings" >ml_x.txt
"$tools/nn-predict" -q -n ml.nc -r ml_x.txt -i features.idx -o features.idx --dump ml_out.txt ||
  fail "nn-predict --dump (MovieLens) failed"
"$tools/nn-export" -q -n ml.nc -o ml.onnx --top-k 10 || fail "nn-export (MovieLens) failed"

[[ -f "$data/train-images-idx3-ubyte.gz" ]] ||
  fail "$data: install Debian's dataset-fashion-mnist (scripts/setup.sh)"
"$tools/nn-encode" idx -i "$data/train-images-idx3-ubyte.gz" -l "$data/train-labels-idx1-ubyte.gz" \
  -o train.nc --limit 300 --class-names fashion-mnist 2>/dev/null || fail "nn-encode failed"
"$tools/nn-encode" idx -i "$data/t10k-images-idx3-ubyte.gz" -l "$data/t10k-labels-idx1-ubyte.gz" \
  -o test.nc --limit 40 --class-names fashion-mnist 2>/dev/null || fail "nn-encode failed"
"$tools/nn-train" -q -c "$src/configs/image-cnn-28x28/network.json" -i train.nc -o train.nc \
  -n cnn.nc -b 32 -e 1 --optimizer Adam --alpha 0.001 --seed 1 --checkpoint-interval 0 ||
  fail "CNN training failed"
"$tools/nn-predict" -q -n cnn.nc --data test.nc --dump-layer Input --dump cnn_in.txt ||
  fail "nn-predict --dump-layer Input (CNN) failed"
"$tools/nn-predict" -q -n cnn.nc --data test.nc --dump cnn_out.txt ||
  fail "nn-predict --dump (CNN) failed"
"$tools/nn-export" -q -n cnn.nc -o cnn.onnx || fail "nn-export (CNN) failed"
