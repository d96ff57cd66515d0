#!/usr/bin/env bash
# nn-export: the MovieLens autoencoder and the Fashion-MNIST CNN exported to ONNX give
# nn-predict's scores within 1e-5, evaluated by a small NumPy reference evaluator of the graph
# (lib/onnx_reference.py, over Debian's python3-onnx, so this runs without onnxruntime;
# export_onnxruntime.sh checks the same with onnxruntime where it can be had). Also: the graph's
# shape, the TopK output, an L2-normalised input with a Variational layer (as they predict:
# normalised rows, the mean), and refusals that name the layer (MaxOut, LRN pooling).
# Usage: export_onnx.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
/usr/bin/python3 -c "import onnx, numpy" 2>/dev/null ||
  { echo "SKIP: Debian's python3-onnx is not installed (scripts/setup.sh installs it)"; exit 77; }
[[ -x "$tools/nn-export" ]] || fail "nn-export was not built"
enter_work_dir
if ! "$tools/nn-export" --help >/dev/null; then fail "nn-export --help failed"; fi

source "$here/lib/onnx_models.sh"
/usr/bin/python3 "$here/lib/onnx_compare.py" reference ml.onnx ml_x.txt ml_out.txt features.idx ||
  fail "MovieLens: the ONNX graph differs from nn-predict"
/usr/bin/python3 "$here/lib/onnx_compare.py" reference cnn.onnx cnn_in.txt cnn_out.txt ||
  fail "CNN: the ONNX graph differs from nn-predict"

# Every other exported kind on the images: batch normalisation (convolutional and fully
# connected), average pooling, a strided unpadded convolution, a skip, dropout, and the LReLU,
# ELU, SELU, Tanh, SoftPlus and SoftSign activations.
cat >mix.json <<'JSON'
{ "Name": "mix", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input" },
    { "Name": "Conv1", "Kind": "Hidden", "Type": "Convolutional", "N": 6, "Kernel": [3, 3],
      "KernelStride": [1, 1], "Activation": "LReLU", "BatchNormalization": true },
    { "Name": "Pool1", "Kind": "Hidden", "Type": "Pooling", "Function": "Average",
      "Kernel": [2, 2], "KernelStride": [2, 2] },
    { "Name": "Conv2", "Kind": "Hidden", "Type": "Convolutional", "N": 8, "Kernel": [3, 3],
      "KernelStride": [2, 2], "Activation": "ELU" },
    { "Name": "H1", "Kind": "Hidden", "N": 32, "Activation": "SELU", "BatchNormalization": true },
    { "Name": "H2", "Kind": "Hidden", "N": 32, "Activation": "Tanh", "Skip": "H1", "pDropout": 0.2 },
    { "Name": "H3", "Kind": "Hidden", "N": 16, "Activation": "SoftPlus" },
    { "Name": "H4", "Kind": "Hidden", "N": 16, "Activation": "SoftSign" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid" } ] }
JSON
"$tools/nn-train" -q -c mix.json -i train.nc -o train.nc -n mix.nc -b 32 -e 1 --optimizer Adam \
  --alpha 0.001 --seed 2 --checkpoint-interval 0 || fail "training the mixed network failed"
"$tools/nn-predict" -q -n mix.nc --data test.nc --dump mix_out.txt || fail "nn-predict (mix)"
"$tools/nn-export" -q -n mix.nc -o mix.onnx || fail "nn-export (mix) failed"
/usr/bin/python3 "$here/lib/onnx_compare.py" reference mix.onnx cnn_in.txt mix_out.txt ||
  fail "mixed network: the ONNX graph differs from nn-predict"

# A Mult-VAE-style network (configs/recommender-mult-vae's layers, smaller): an L2-normalised
# input and a Variational layer, exported as they predict (the normalisation, then the mean).
cat >vae.json <<'JSON'
{ "Name": "vae", "ErrorFunction": "CrossEntropy", "SoftMaxTargets": "Raw", "Denoising": { "p": 0.5 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true,
      "Normalize": "L2" },
    { "Name": "Encoder", "Kind": "Hidden", "N": 32, "Activation": "Tanh" },
    { "Name": "Code", "Kind": "Hidden", "Type": "Variational", "N": 16,
      "KL": { "Beta": 0.2, "AnnealSteps": 20 } },
    { "Name": "Decoder", "Kind": "Hidden", "N": 32, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax" } ] }
JSON
"$tools/nn-train" -q -c vae.json -i input.nc -o output.nc -n vae.nc -b 64 -e 1 --optimizer Adam \
  --alpha 0.001 --seed 3 --checkpoint-interval 0 || fail "training the Mult-VAE network failed"
"$tools/nn-predict" -q -n vae.nc -r ml_x.txt -i features.idx -o features.idx --dump vae_out.txt ||
  fail "nn-predict --dump (Mult-VAE) failed"
"$tools/nn-export" -q -n vae.nc -o vae.onnx || fail "nn-export (Mult-VAE) failed"
/usr/bin/python3 "$here/lib/onnx_compare.py" reference vae.onnx ml_x.txt vae_out.txt features.idx ||
  fail "Mult-VAE: the ONNX graph differs from nn-predict"

# The graph: input [batch, 9728] named after the input layer, scores first, ONNX's checker.
/usr/bin/python3 - <<'PY' || fail "graph shape"
import onnx
m = onnx.load("ml.onnx")
onnx.checker.check_model(m)
dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
assert [(i.name, dims(i)) for i in m.graph.input] == [("Input", ["batch", 9728])], m.graph.input
assert [(o.name, dims(o)) for o in m.graph.output] == [
    ("Output", ["batch", 9728]), ("Output_topk_scores", ["batch", 10]),
    ("Output_topk_indices", ["batch", 10])], m.graph.output
assert m.opset_import[0].version == 13
c = onnx.load("cnn.onnx")
ops = sorted({n.op_type for n in c.graph.node})
assert {"Conv", "MaxPool", "Relu", "Softmax", "MatMul"} <= set(ops), ops
print("graphs: MovieLens", [n.op_type for n in m.graph.node], "| CNN", ops)
PY

# Layers that cannot be exported are refused by name, and nothing is written.
tiny_ratings
tiny_datasets "$tools"
tiny_config 8 MaxOut
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n maxout.nc -e 1 -b 8 ||
  fail "training the MaxOut network failed"
tool="$tools/nn-export"
expect_status 1 -n maxout.nc -o maxout.onnx
grep -q "error: layer 'Hidden': MaxOut activation; it cannot be exported to ONNX" err.txt ||
  fail "MaxOut refusal: $(cat err.txt)"
[[ ! -e maxout.onnx ]] || fail "a refused export left maxout.onnx"
expect_status 2 -n ml.nc
expect_status 2 -n ml.nc -o x.onnx --top-k 100000
grep -q "top-k 100000: the output layer 'Output' has 9728 units" err.txt || fail "$(cat err.txt)"
echo "export_onnx: OK"
