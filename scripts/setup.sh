#!/usr/bin/env bash
# One-step set-up on Debian: installs the packages the build needs (if missing) and builds
# everything (Release) into build/. Safe to re-run; a re-run only rebuilds what changed.
#   NN_BUILD_DIR   build directory (default: build)
#   NN_CUDA=OFF    build without the CUDA backend even when nvcc is present
#   NN_SKIP_APT=1  do not touch packages
#   NN_NATIVE=OFF  portable binaries: no -march=native (by default the build is tuned to this
#                  machine's CPU and may stop with "illegal instruction" on an older one)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make pkg-config libopenmpi-dev openmpi-bin libnetcdf-c++4-dev libnetcdf-dev
          netcdf-bin nlohmann-json3-dev libcli11-dev libopenblas-dev libgtest-dev python3
          libdnnl-dev ocl-icd-opencl-dev opencl-headers zlib1g-dev dataset-fashion-mnist
          gnuplot-nox   # gnuplot: nn-train's loss curve PNG (optional; training works without)
          groff-base    # groff's man macros: CTest docs.man-lint renders the man pages
          libcpp-httplib-dev curl              # nn-serve's HTTP server; curl: docs/serving.md
          libonnx-dev libprotobuf-dev python3-onnx  # nn-export; python3-onnx checks its graphs
          python3-dev pybind11-dev python3-pybind11 python3-numpy python3-scipy python3-pytest
          python3-venv)
          # the Python module nnsuite (python/, docs/python.md), its pytest suite, and a virtual
          # environment for `pip install .` (Debian's pip refuses the system interpreter, PEP 668)
if [ "${NN_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

build=${NN_BUILD_DIR:-build}
options=()
[ -n "${NN_CUDA:-}" ] && options=(-DNN_ENABLE_CUDA="${NN_CUDA}")
[ -n "${NN_NATIVE:-}" ] && options+=(-DNN_NATIVE="${NN_NATIVE}")
# ccache (when installed) makes rebuilds and further checkouts of the same tree cheap.
launcher=()
command -v ccache >/dev/null 2>&1 &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${options[@]}" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "setup: built into $build/ (tools in $build/src/tools)"
