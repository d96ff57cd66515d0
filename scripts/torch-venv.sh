#!/usr/bin/env bash
# Current PyTorch from PyPI in a virtual environment (out/torch-venv), the peer of the speed
# benchmarks (scripts/bench_autoencoder.sh; docs/performance.md). Debian's python3-torch is 1.13,
# 3-4 times slower on the CPU than current releases and without torch.compile, so it is no fair
# peer. Needs the internet (or a pip mirror: PIP_INDEX_URL). Prints the python to use.
# Usage: scripts/torch-venv.sh [VENV_DIR]   (TORCH_SPEC=torch==2.x picks a version)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/out/torch-venv}
spec=${TORCH_SPEC:-torch}
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "torch-venv: installing $spec from PyPI into $venv (about 3 GB with its CUDA libraries)" >&2
  "$venv/bin/pip" install -q --timeout 60 "$spec" >&2
fi
version=$("$venv/bin/python" -c "import torch; print(torch.__version__)")
echo "torch-venv: torch $version in $venv" >&2
echo "$venv/bin/python"
