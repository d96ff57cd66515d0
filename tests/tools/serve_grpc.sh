#!/usr/bin/env bash
# nn-serve's gRPC front (--grpc-port) checked with Triton's own client, tritonclient.grpc (PyPI),
# against the HTTP endpoint of the same server (lib/serve_grpc_check.py): the same rows get the
# same scores bit for bit, alone and under concurrent load; metadata, config and statistics agree;
# refusals carry HTTP's message under the matching gRPC code (NOT_FOUND, INVALID_ARGUMENT,
# RESOURCE_EXHAUSTED); grpc.health.v1 says SERVING; a reload shows through gRPC; SIGTERM drains.
# tritonclient is installed on first use into a virtual environment of the build tree
# (<build>/tritonclient-venv); NN_TRITONCLIENT_PYTHON names another interpreter that has it.
# Skipped (exit 77, with the reason) where nn-serve was built without gRPC or tritonclient cannot
# be installed (no PyPI).
# Usage: serve_grpc.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-serve" ]] || fail "nn-serve was not built"
if ! "$tools/nn-serve" --help | grep -q -- --grpc-port; then
  echo "SKIP: this nn-serve has no --grpc-port (built without libgrpc++-dev)"
  exit 77
fi
python=${NN_TRITONCLIENT_PYTHON:-}
if [[ -z $python ]]; then
  venv=$(realpath "$tools/../..")/tritonclient-venv
  python=$venv/bin/python
  if ! "$python" -c "import tritonclient.grpc, tritonclient.http, numpy" 2>/dev/null; then
    rm -rf "$venv"
    log=$(mktemp)
    if ! { /usr/bin/python3 -m venv "$venv" &&
           timeout 600 "$venv/bin/pip" install -q --timeout 15 --retries 1 \
             "tritonclient[grpc,http]" numpy; } >"$log" 2>&1; then
      echo "SKIP: tritonclient could not be installed from PyPI into $venv: $(tail -3 "$log")"
      rm -rf "$venv" "$log"
      exit 77
    fi
    rm -f "$log"
  fi
fi
"$python" -c "import tritonclient.grpc, tritonclient.http, numpy" 2>/dev/null ||
  { echo "SKIP: $python cannot import tritonclient.grpc, tritonclient.http and numpy"; exit 77; }
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 1 -b 8 --seed 1
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net2.nc -e 2 -b 8 --seed 2
timeout 300 "$python" "$here/lib/serve_grpc_check.py" "$tools"
echo "serve_grpc: OK ($("$python" -c 'from importlib.metadata import version as v
print("tritonclient", v("tritonclient"), "grpcio", v("grpcio"))'))"
