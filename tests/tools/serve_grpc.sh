#!/usr/bin/env bash
# nn-serve's gRPC front (--grpc-port) checked with Triton's own client, tritonclient.grpc (PyPI),
# against the HTTP endpoint of the same server (lib/serve_grpc_check.py): the same rows get the
# same scores bit for bit, alone and under concurrent load; metadata, config and statistics agree;
# refusals carry HTTP's message under the matching gRPC code (NOT_FOUND, INVALID_ARGUMENT,
# RESOURCE_EXHAUSTED); grpc.health.v1 says SERVING; a reload shows through gRPC; SIGTERM drains.
# With --grpc-tls-cert/--grpc-tls-key (tests/data/tls) a TLS client is served and a plain one not.
# tritonclient is installed on first use into a virtual environment of the build tree
# (<build>/tritonclient-venv); NN_TRITONCLIENT_PYTHON names another interpreter that has it.
# Before that, without a client: a gRPC port in use is an error (exit 1), not shared. Skipped
# (exit 77, with the reason) where nn-serve was built without gRPC, or, after the checks without
# a client, where tritonclient cannot be installed (no PyPI).
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
# Without a client: a gRPC port that is taken is an error (gRPC would share it by default), and
# one out of range a usage error.
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 1 -b 8 --seed 1
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net2.nc -e 2 -b 8 --seed 2
serve=("$tools/nn-serve" -n network.nc -i features.idx -o features.idx --port 0 -q)
"${serve[@]}" --grpc-port 0 2>first.log &
first=$!
for _ in $(seq 300); do grep -q "listening on http" first.log && break; sleep 0.1; done
grpc_port=$(grep -o "gRPC listening on 127.0.0.1:[0-9]*" first.log | grep -o "[0-9]*$") ||
  fail "no gRPC port announced: $(cat first.log)"
status=0
timeout 60 "${serve[@]}" --grpc-port "$grpc_port" 2>second.log || status=$?
kill -TERM "$first"
wait "$first" || fail "the first server exited $? after SIGTERM"
[[ $status == 1 ]] &&
  grep -q "nn-serve: error: gRPC: cannot listen on 127.0.0.1:$grpc_port" second.log ||
  fail "a second server on gRPC port $grpc_port exited $status: $(cat second.log)"
status=0
"${serve[@]}" --grpc-port 70000 2>err.txt || status=$?
[[ $status == 2 ]] || fail "--grpc-port 70000 exited $status: $(cat err.txt)"

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
timeout 300 "$python" "$here/lib/serve_grpc_check.py" "$tools"

# TLS (tests/data/tls: a test-only self-signed certificate for 127.0.0.1): a client that trusts
# it is served; a plain-text client is not; a key without its certificate is a usage error.
tls=$(realpath "$here/../data/tls")
status=0
"${serve[@]}" --grpc-port 0 --grpc-tls-key "$tls/test-only.key" 2>err.txt || status=$?
[[ $status == 2 ]] && grep -q "give both or neither" err.txt ||
  fail "--grpc-tls-key alone exited $status: $(cat err.txt)"
"${serve[@]}" --grpc-port 0 --grpc-tls-cert "$tls/test-only.crt" \
  --grpc-tls-key "$tls/test-only.key" 2>tls.log &
secure=$!
for _ in $(seq 300); do grep -q "listening on http" tls.log && break; sleep 0.1; done
tls_port=$(grep -o "gRPC listening on 127.0.0.1:[0-9]* with TLS" tls.log | grep -o ":[0-9]*" |
           tr -d :) || fail "no TLS gRPC port announced: $(cat tls.log)"
timeout 60 "$python" - "$tls_port" "$tls/test-only.crt" <<'PY' || fail "gRPC over TLS"
import sys
import grpc

port, cert = sys.argv[1], open(sys.argv[2], "rb").read()


def health(channel):
    call = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda b: b,
                               response_deserializer=lambda b: b)
    try:
        return call(b"", timeout=10)
    except grpc.RpcError as e:
        return e.code().name


with grpc.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(cert)) as c:
    answer = health(c)
    assert answer == b"\x08\x01", f"over TLS: {answer!r}, expected SERVING"
with grpc.insecure_channel(f"127.0.0.1:{port}") as c:
    answer = health(c)
    assert answer == "UNAVAILABLE", f"plain text to a TLS port: {answer!r}, expected UNAVAILABLE"
print("serve_grpc: TLS OK")
PY
kill -TERM "$secure"
wait "$secure" || fail "the TLS server exited $? after SIGTERM"
echo "serve_grpc: OK ($("$python" -c 'from importlib.metadata import version as v
print("tritonclient", v("tritonclient"), "grpcio", v("grpcio"))'))"
