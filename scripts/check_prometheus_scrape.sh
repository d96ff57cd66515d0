#!/usr/bin/env bash
# A real Prometheus scraping nn-serve on loopback (not CI: it needs Debian's `prometheus`
# package). A tiny network is trained, nn-serve started on a free port, Prometheus started on
# another with a 1 s scrape interval; a known number of requests is sent, and after a few scrapes
# the counters are read back through Prometheus's HTTP API (/api/v1/query) and compared with what
# was sent. Prints each query and its value; exits 1 on a mismatch.
# Usage: scripts/check_prometheus_scrape.sh <tool-dir (e.g. build/src/tools)> [requests (default 50)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$(realpath "${1:?usage: $0 <tool-dir> [requests]}")
requests=${2:-50}
command -v prometheus >/dev/null || { echo "needs prometheus (apt-get install prometheus)" >&2; exit 1; }
source "$root/tests/tools/lib/common.sh"
work=$(mktemp -d)
serve_pid="" prom_pid=""
cleanup() {
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  [[ -n $prom_pid ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
tiny_ratings
tiny_datasets "$tools"
tiny_config 8
"$tools/nn-train" -q -c config.json -i input.nc -o output.nc -n network.nc -e 1 -b 8 --seed 1

"$tools/nn-serve" -q --port 0 -n network.nc -i features.idx -o features.idx 2>serve.log &
serve_pid=$!
for _ in $(seq 100); do grep -q "listening on" serve.log && break; sleep 0.1; done
port=$(grep -o "127.0.0.1:[0-9]*" serve.log | head -1 | cut -d: -f2)
[[ -n $port ]] || { cat serve.log >&2; exit 1; }
prom_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >prometheus.yml <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: nn-serve
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOF
prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb \
  --web.listen-address="127.0.0.1:$prom_port" >prometheus.log 2>&1 &
prom_pid=$!
echo "nn-serve on 127.0.0.1:$port, Prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') on 127.0.0.1:$prom_port"

# The known load: $requests recommendations, 3 unknown paths, 2 bodies refused by the front.
python3 - "$port" "$requests" <<'EOF'
import http.client, json, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
def req(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body)
    r = c.getresponse(); r.read(); c.close()
    return r.status
assert all(req("POST", "/recommend", json.dumps({"items": ["m1"], "k": 3})) == 200 for _ in range(n))
assert all(req("GET", "/nowhere") == 404 for _ in range(3))
for _ in range(2):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/1.1 413")
    s.close()
EOF

query() {
  python3 - "$prom_port" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
try:
    answer = json.load(urllib.request.urlopen(url, timeout=10))
    result = answer["data"]["result"]
    print(result[0]["value"][1] if result else "none")
except Exception as e:  # Prometheus still starting
    print("none")
EOF
}
want_recommend="nn_serve_requests_total{job=\"nn-serve\",endpoint=\"recommend\",code=\"200\"}"
# Wait (at most 30 s) until a scrape after the load has landed.
for _ in $(seq 60); do
  [[ $(query "$want_recommend") == "$requests" ]] && break
  sleep 0.5
done
sleep 3  # a few more scrapes
status=0
expect() {  # expect <query> <value>
  local got
  got=$(query "$1")
  printf '%-95s %s' "$1" "$got"
  if [[ -n $2 && $got != "$2" ]]; then
    printf '   MISMATCH: expected %s\n' "$2"
    status=1
  else
    printf '\n'
  fi
}
expect 'up{job="nn-serve"}' 1
expect "$want_recommend" "$requests"
expect 'nn_serve_requests_total{endpoint="unknown",code="404"}' 3
expect 'nn_serve_requests_total{endpoint="refused",code="413"}' 2
expect 'nn_serve_batch_rows_sum' "$requests"
expect 'nn_serve_model_version' 1
expect 'count(count_over_time(nn_serve_requests_total{endpoint="recommend"}[1m]))' 1
expect 'count_over_time(up{job="nn-serve"}[1m]) >= 3' ""
expect 'histogram_quantile(0.99, sum by (le) (nn_serve_request_duration_seconds_bucket))' ""
expect 'process_resident_memory_bytes{job="nn-serve"}' ""
[[ $status == 0 ]] && echo "check_prometheus_scrape: OK" || echo "check_prometheus_scrape: FAILED"
exit $status
