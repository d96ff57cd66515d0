#!/usr/bin/env bash
# nn-serve as a process on loopback: endpoints, bad requests, batched == unbatched answers under
# concurrent clients, reload on SIGHUP and on a replaced file with requests in flight, SIGTERM
# draining, the access log and -q (lib/serve_http_check.py); then usage errors, a port in use and
# a CDL file with Command Serve. Every server listens on 127.0.0.1 on a free port and is stopped.
# Usage: serve_http.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
source "$here/lib/common.sh"
[[ -x "$tools/nn-serve" ]] || fail "nn-serve was not built"
enter_work_dir
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 3 -b 8 --seed 1
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n net2.nc -e 3 -b 8 --seed 2
# A network slow enough that one large request is still running when SIGTERM comes (drain test).
sed 's/"Name": "Hidden", "Kind": "Hidden", "N": 8,/"Name": "H1", "Kind": "Hidden", "N": 1536,/' \
  config.json | sed 's/"Name": "Output"/"Name": "H2", "Kind": "Hidden", "N": 1536, "Activation": "Sigmoid" },\n    { "Name": "Output"/' >slow.json
"$tools/nn-train" -q -c slow.json -i input.nc -o output.nc -n slow.nc -e 1 -b 8 --seed 3
timeout 300 /usr/bin/python3 "$here/lib/serve_http_check.py" "$tools"
# The check left a broken network.nc behind (its refused reload): the tests below need a good one.
cp net2.nc network.nc

tool="$tools/nn-serve"
expect_status 0 --help
# The network carries its items: -o may be left out, and an -i listing them in another order
# is refused (tests/tools/retraining.sh tests networks without items).
awk -F'\t' '{ print $1 "\t" (NR % 2 ? NR : NR - 2) }' features.idx >swapped.idx
expect_status 1 -n network.nc -i swapped.idx
grep -q "error: -i swapped.idx does not match the items of layer 'Input'" err.txt || fail "$(cat err.txt)"
expect_status 2 -n missing.nc -i features.idx -o features.idx
expect_status 2 -n network.nc -i features.idx -o features.idx --max-body 12Q
expect_status 2 -n network.nc -i features.idx -o features.idx -k 5000
# A port already taken: exit 1, saying which.
python3 -c 'import socket, time, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
time.sleep(20)' >port.txt &
holder=$!
for _ in $(seq 100); do [[ -s port.txt ]] && break; sleep 0.1; done
expect_status 1 -n network.nc -i features.idx -o features.idx --port "$(cat port.txt)"
grep -q "error: cannot listen on 127.0.0.1:$(cat port.txt)" err.txt || fail "$(cat err.txt)"
kill "$holder" 2>/dev/null || true
# A CDL file with Command Serve (and flags beside it override it).
cat >serve.cdl <<'JSON'
{ "Command": "Serve", "Network": "network.nc",
  "ServeParameters": { "InputIndex": "features.idx", "OutputIndex": "features.idx", "Port": 0,
                       "K": 2, "ModelName": "from-cdl" } }
JSON
"$tool" serve.cdl --max-batch 8 2>cdl.log &
pid=$!
for _ in $(seq 100); do grep -q "listening on" cdl.log 2>/dev/null && break; sleep 0.1; done
port=$(grep -o "127.0.0.1:[0-9]*" cdl.log | head -1 | cut -d: -f2)
[[ -n $port ]] || fail "the CDL server did not start: $(cat cdl.log)"
answer=$(python3 -c "import http.client, sys
c = http.client.HTTPConnection('127.0.0.1', $port, timeout=10)
c.request('POST', '/recommend', body='{\"items\": [\"m0\"]}'); print(c.getresponse().read().decode())
c = http.client.HTTPConnection('127.0.0.1', $port, timeout=10)
c.request('GET', '/v2/models/from-cdl'); print(c.getresponse().status)")
kill -TERM "$pid"
wait "$pid" || fail "the CDL server exited $?"
[[ $(echo "$answer" | head -1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))') == 2 ]] ||
  fail "CDL K 2: $answer"
[[ $(echo "$answer" | tail -1) == 200 ]] || fail "CDL ModelName: $answer"
grep -q "batches of up to 8 rows" cdl.log || fail "--max-batch beside the CDL: $(cat cdl.log)"
expect_status 2 serve.cdl -n network.nc
echo "serve_http: OK"
