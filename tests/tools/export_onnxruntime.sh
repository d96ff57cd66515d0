#!/usr/bin/env bash
# nn-export checked with onnxruntime (PyPI) in a virtual environment of the build tree
# (<build>/onnxruntime-venv, made on first use with --system-site-packages for Debian's NumPy and
# python3-onnx; NN_ONNXRUNTIME_PYTHON names another interpreter that has it): the MovieLens
# autoencoder and the Fashion-MNIST CNN give nn-predict's scores within 1e-5, and the TopK output
# agrees. Where onnxruntime cannot be installed (no PyPI, no wheel for this Python) the test is
# skipped with exit 77 and the reason; export_onnx.sh checks the same graphs without it.
# Usage: export_onnxruntime.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
src=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-export" ]] || fail "nn-export was not built"
python=${NN_ONNXRUNTIME_PYTHON:-}
if [[ -z $python ]]; then
  venv=$(realpath "$tools/../..")/onnxruntime-venv
  python=$venv/bin/python
  if ! "$python" -c "import onnxruntime" 2>/dev/null; then
    rm -rf "$venv"
    log=$(mktemp)
    if ! { /usr/bin/python3 -m venv --system-site-packages "$venv" &&
           timeout 600 "$venv/bin/pip" install -q --timeout 15 --retries 1 onnxruntime; } \
         >"$log" 2>&1; then
      echo "SKIP: onnxruntime could not be installed from PyPI into $venv: $(tail -3 "$log")"
      rm -rf "$venv" "$log"
      exit 77
    fi
    rm -f "$log"
  fi
fi
"$python" -c "import onnxruntime, onnx" 2>/dev/null ||
  { echo "SKIP: $python cannot import onnxruntime and onnx"; exit 77; }
enter_work_dir
source "$here/lib/onnx_models.sh"
"$python" "$here/lib/onnx_compare.py" onnxruntime ml.onnx ml_x.txt ml_out.txt features.idx ||
  fail "MovieLens: onnxruntime's scores differ from nn-predict's"
"$python" "$here/lib/onnx_compare.py" onnxruntime cnn.onnx cnn_in.txt cnn_out.txt ||
  fail "CNN: onnxruntime's scores differ from nn-predict's"
echo "export_onnxruntime: OK ($("$python" -c 'import onnxruntime; print("onnxruntime", onnxruntime.__version__)'))"
