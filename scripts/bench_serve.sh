#!/usr/bin/env bash
# Serving benchmark on loopback: the MovieLens sample's autoencoder (samples/movielens, the
# configs/recommender-autoencoder network, trained for a few epochs: speed does not depend on how
# well it is trained) behind nn-serve, at 1, 8 and 64 concurrent clients (closed loop, one
# keep-alive connection each; nn-bench-serve-load), with dynamic batching (--max-batch 256
# --max-delay-ms 2) and without (--max-batch 1 --max-delay-ms 0): requests per second and
# p50/p99 latency of POST /recommend (k 10, the user's rated movies left out); then an open load
# of --rate requests a second (default 1000, 16 clients, latency from each request's scheduled
# start), the issue's aim being p99 under 5 ms there on 2 cores. In the same run,
# samples/movielens/serve.py (the Python module's in-process thread pool, no HTTP) on the same
# network. Every cell is bounded: at most --requests requests and --seconds seconds.
# Usage: scripts/bench_serve.sh [--requests N] [--seconds S] [--threads T] [--clients "1 8 64"]
#                               [--rate Q]
# The work directory is build/bench-serve (NN_BENCH_DIR); a trained network there is reused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
requests=20000
seconds=10
rate=1000
threads=$(nproc)
clients="1 8 64"
while [ $# -gt 0 ]; do
  case $1 in
    --requests) requests=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) echo "usage: $0 [--requests N] [--seconds S] [--threads T] [--clients \"1 8 64\"]" \
            "[--rate Q]" >&2
       exit 2 ;;
  esac
done
build=${NN_BUILD_DIR:-$root/build}
tools=$build/src/tools
load=$build/bench/nn-bench-serve-load
[ -x "$tools/nn-serve" ] && [ -x "$load" ] || bash "$root/scripts/setup.sh" tools nn-bench-serve-load
work=${NN_BENCH_DIR:-$build/bench-serve}
mkdir -p "$work"
cd "$work"

ratings=$root/samples/movielens/ratings.csv
if [ ! -s network.nc ]; then
  echo "== training the MovieLens sample's network (5 epochs) in $work"
  "$tools/nn-generate" -q -d input -i "$ratings" --rows --header -o input.nc -f features.idx \
    -s samples.idx -c
  "$tools/nn-generate" -q -d output -i "$ratings" --rows --header -o output.nc -f features.idx \
    -s samples.idx
  "$tools/nn-train" -q -c "$root/configs/recommender-autoencoder/network.json" -i input.nc \
    -o output.nc -n network.nc -e 5 -b 32 --seed 1
fi
# Requests: each user's rated movies (at most 50), as the sample's recommender sees them.
python3 - "$ratings" >requests.jsonl <<'PY'
import csv, json, sys
users = {}
with open(sys.argv[1], newline="") as f:
    for row in csv.reader(f):
        if row and row[0].isdigit():
            users.setdefault(row[0], []).append(row[1])
for user, items in users.items():
    print(json.dumps({"items": items[:50], "k": 10}))
PY

server=""
stop_server() {
  if [ -n "$server" ]; then
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
  fi
}
trap stop_server EXIT
start_server() {  # start_server LOG FLAGS...: nn-serve on a free port; sets $server and $port
  local log=$1
  shift
  "$tools/nn-serve" -q --port 0 -n network.nc -i features.idx -o features.idx \
    --threads "$threads" "$@" 2>"$log" &
  server=$!
  port=""
  for _ in $(seq 300); do
    port=$(grep -o "127.0.0.1:[0-9]*" "$log" 2>/dev/null | head -1 | cut -d: -f2) || true
    [ -n "$port" ] && return 0
    kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "bench_serve: nn-serve did not start: $(cat "$log")" >&2
  exit 1
}

results=$work/results.jsonl
: >"$results"
for mode in batching none; do
  if [ $mode = batching ]; then
    start_server serve-batching.log --max-batch 256 --max-delay-ms 2
  else
    start_server serve-none.log --max-batch 1 --max-delay-ms 0
  fi
  # Warm-up: connections, evaluators, caches.
  "$load" --port "$port" --bodies requests.jsonl --clients 8 --requests 400 --seconds 5 >/dev/null
  for c in $clients; do
    line=$("$load" --port "$port" --bodies requests.jsonl --clients "$c" --requests "$requests" \
           --seconds "$seconds")
    echo "{\"mode\": \"$mode\", ${line#\{}" | tee -a "$results"
  done
  line=$("$load" --port "$port" --bodies requests.jsonl --clients 16 --rate "$rate" \
         --requests "$(python3 -c "print(int($rate * $seconds))")" --seconds "$seconds")
  echo "{\"mode\": \"$mode\", ${line#\{}" | tee -a "$results"
  stop_server
done

echo "== samples/movielens/serve.py (in-process, $threads threads, no HTTP)"
py_line=$(PYTHONPATH=$build/python timeout 120 /usr/bin/python3 "$root/samples/movielens/serve.py" \
          network.nc --threads "$threads" --requests "$requests" | head -1) || py_line="(failed)"
echo "$py_line"

echo
echo "nn-serve, POST /recommend, $threads evaluator threads, $(nproc) CPUs; $(uptime | sed 's/.*load/load/')"
python3 - "$results" "$py_line" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| batching | load | requests | req/s | p50 ms | p99 ms |")
print("|---|---|---:|---:|---:|---:|")
for r in rows:
    mode = "256 rows / 2 ms" if r["mode"] == "batching" else "off"
    load = (f"{r['rate']:.0f} req/s offered, {r['clients']} clients" if r["rate"] > 0
            else f"{r['clients']} client{'s' if r['clients'] > 1 else ''}, closed loop")
    print(f"| {mode} | {load} | {r['requests']} | {r['rps']:.0f} | {r['p50_ms']:.2f} | "
          f"{r['p99_ms']:.2f} |")
print(f"| serve.py, in-process, no HTTP | {sys.argv[2]} | | | | |")
PY
