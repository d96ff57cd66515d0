#!/usr/bin/env bash
# One-step set-up on Debian: installs the packages the build needs (if missing), configures build/
# (Release) and builds what is asked, printing a line per stage with its progress and timing.
# Safe to re-run; a re-run only rebuilds what changed.
#
# Usage: scripts/setup.sh [WHAT...]
#   (nothing)  the engine, the six tools and libnn.so: what samples/movielens/run.sh and
#              `cmake --install` need (the default)
#   all        everything: tools, tests, benchmarks, the Python module, libnn.so
#   python     the Python module nnsuite (build/python)
#   NAME       any other CMake target, e.g. nn-bench-gather or nn_train_tests
# scripts/test.sh runs `setup.sh all` on the same build tree, so nothing is compiled twice.
# Environment:
#   NN_BUILD_DIR   build directory (default: build)
#   NN_CUDA=OFF    build without the CUDA backend even when nvcc is present
#   NN_SKIP_APT=1  do not touch packages
#   NN_NATIVE=OFF  portable binaries: no -march=native (by default the build is tuned to this
#                  machine's CPU and may stop with "illegal instruction" on an older one)
#   NN_JOBS        parallel compile jobs (default: one per core)
# The build log is kept in <build>/setup-build.log; a failed build prints its errors.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
since() { echo "$(($(date +%s) - $1)) s"; }

packages=(cmake ninja-build g++ make pkg-config libopenmpi-dev openmpi-bin libnetcdf-c++4-dev
          libnetcdf-dev netcdf-bin nlohmann-json3-dev libcli11-dev libopenblas-dev libgtest-dev
          python3 libdnnl-dev ocl-icd-opencl-dev opencl-headers zlib1g-dev dataset-fashion-mnist
          gnuplot-nox   # gnuplot: nn-train's loss curve PNG (optional; training works without)
          groff-base    # groff's man macros: CTest docs.man-lint renders the man pages
          libboost-dev                         # nn-serve's HTTP server (Boost.Beast/Asio)
          libgrpc++-dev protobuf-compiler-grpc  # nn-serve --grpc-port
          libcpp-httplib-dev curl              # the serving benchmark's client; curl: docs/serving.md
          libb64-0d                            # perf_analyzer (tritonclient's wheel) in bench_serve.sh
          libonnx-dev libprotobuf-dev python3-onnx  # nn-export; python3-onnx checks its graphs
          protobuf-compiler  # protoc: TensorBoard event records, nn-serve gRPC messages
          python3-dev pybind11-dev python3-pybind11 python3-numpy python3-scipy python3-pytest
          python3-venv)
          # the Python module nnsuite (python/, docs/python.md), its pytest suite, and a virtual
          # environment for `pip install .` (Debian's pip refuses the system interpreter, PEP 668)
# Only the tests need Slurm: tests/tools/mpi_slurm_requeue.sh starts a Slurm of its own (its
# daemons, configuration and munge key in its work directory), so nothing is configured here.
# pandas: nnsuite.Recommender takes DataFrames (an optional extra of the module); its tests and
# docs/python.md's examples use one.
for what in "$@"; do
  [[ $what == all ]] && packages+=(slurmctld slurmd slurm-client munge python3-pandas)
done
if [ "${NN_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: [1/3] packages: installing ${#missing[@]} missing (about 1-3 min on a fresh" \
         "machine): ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    t=$(date +%s)
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "setup: [1/3] packages: installed in $(since "$t")"
  else
    echo "setup: [1/3] packages: all ${#packages[@]} installed"
  fi
else
  echo "setup: [1/3] packages: not checked (NN_SKIP_APT=1)"
fi

build=${NN_BUILD_DIR:-build}
options=()
[ -n "${NN_CUDA:-}" ] && options=(-DNN_ENABLE_CUDA="${NN_CUDA}")
[ -n "${NN_NATIVE:-}" ] && options+=(-DNN_NATIVE="${NN_NATIVE}")
# Ninja schedules every component's files at once (Make waits for each library before compiling
# the next one's files); a tree first configured with another generator keeps it.
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
  options+=(-G Ninja)
fi
# ccache (when installed) makes rebuilds and further checkouts of the same tree cheap.
command -v ccache >/dev/null 2>&1 &&
  options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
t=$(date +%s)
echo "setup: [2/3] configure $build/ (Release)"
mkdir -p "$build"
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${options[@]}" >"$build/setup-configure.log" 2>&1
then
  cat "$build/setup-configure.log" >&2
  echo "setup: error: configuring $build/ failed (output above)" >&2
  exit 1
fi
generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$build/CMakeCache.txt")
summary=$(sed -n 's/^-- nn: //p' "$build/setup-configure.log" | head -1)
echo "setup: [2/3] configured in $(since "$t"): $generator, $summary"

# What to build: CMake targets (`tools`: the engine, the six tools and libnn.so; `all`: everything).
targets=()
for w in "$@"; do
  case "$w" in
    python) targets+=(nnsuite_core) ;;
    *) targets+=("$w") ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(tools)
jobs=${NN_JOBS:-$(nproc)}
log="$build/setup-build.log"
# A first build says how many steps it has (Ninja lists them) and roughly how long they take,
# from the ~2 s of CPU a step took on the 2-core machine this was measured on (183 steps of the
# tools in 188 s); a rebuild compiles only what changed.
t=$(date +%s)
if [ -f "$build/build.ninja" ] && [ ! -f "$build/.ninja_log" ]; then
  steps=$(ninja -C "$build" -t commands "${targets[@]}" 2>/dev/null | wc -l)
  minutes=$(((steps * 2 + jobs * 60 - 1) / (jobs * 60)))
  echo "setup: [3/3] build ${targets[*]}: $steps steps on $jobs cores, roughly $minutes min" \
       "(log: $log)"
else
  echo "setup: [3/3] build ${targets[*]} on $jobs cores (log: $log)"
fi
# The full output goes to the log; the terminal gets a progress line at every tenth of the way
# (from Ninja's [done/total] or Make's [ nn%]) with the time so far and an estimate of what is left.
progress() {
  local line pct shown=0 elapsed begin=$SECONDS count=""
  while IFS= read -r line; do
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
      count=" (${BASH_REMATCH[1]}/${BASH_REMATCH[2]})"
    elif [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then
      pct=${BASH_REMATCH[1]}
    else
      continue
    fi
    if ((pct / 10 > shown)); then
      shown=$((pct / 10))
      elapsed=$((SECONDS - begin))
      echo "setup: build $pct%$count, $elapsed s so far, about $((elapsed * (100 - pct) / pct)) s left"
    fi
  done
}
set +e
cmake --build "$build" -j"$jobs" --target "${targets[@]}" 2>&1 | tee "$log" | progress
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "setup: error: the build failed; its errors (whole log: $log):" >&2
  grep -E -A5 'error|Error|FAILED' "$log" | head -80 >&2
  exit "$status"
fi
echo "setup: [3/3] built ${targets[*]} in $(since "$t") (tools in $build/src/tools); set-up took" \
     "$(since "$start")"
