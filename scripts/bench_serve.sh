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
# network. Then the Open Inference Protocol's POST /v2/models/<name>/infer (the users' rows as
# dense FP32 JSON, with batching) driven by the same load generator and by Triton's perf_analyzer
# over HTTP (JSON tensors, and Triton's binary tensors) and over gRPC (--grpc-port), at the same
# client counts: perf_analyzer comes from tritonclient 2.41.1's wheel (PyPI's perf-analyzer is a placeholder; newer wheels'
# binary needs a newer glibc than Debian 12's), installed into <build>/perf-analyzer-venv with
# libcudart.so.12 from nvidia-cuda-runtime-cu12, and needs libb64-0d (scripts/setup.sh installs
# it); NN_PERF_ANALYZER names another binary; without it (no PyPI) those rows are left out and
# the script says why. Every cell is bounded: at most --requests requests and --seconds seconds
# (perf_analyzer: 2-second windows until three in a row agree within 50% (its default, 10%, is
# rarely met on 2 shared cores), at most 10 of them).
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
    port=$(grep -o "http://127.0.0.1:[0-9]*" "$log" 2>/dev/null | head -1 | cut -d: -f3) || true
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

# --- The Open Inference Protocol: our load generator and perf_analyzer (HTTP, gRPC) ---
# perf_analyzer from tritonclient 2.41.1's wheel (see the top), or NN_PERF_ANALYZER.
perf=${NN_PERF_ANALYZER:-}
perf_env=()
perf_why=""
rm -f perf-skipped.txt
if [ -z "$perf" ]; then
  venv=$build/perf-analyzer-venv
  if [ ! -x "$venv/bin/perf_analyzer" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" &&
      timeout 600 "$venv/bin/pip" install -q --timeout 15 --retries 1 tritonclient==2.41.1 \
        nvidia-cuda-runtime-cu12; } >perf-install.log 2>&1 ||
      { perf_why="perf_analyzer could not be installed: $(tail -2 perf-install.log)"; rm -rf "$venv"; }
  fi
  perf=$venv/bin/perf_analyzer
  cudart=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cuda_runtime/lib 2>/dev/null | head -1)
  perf_env=(env "LD_LIBRARY_PATH=${cudart}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
# It has no --help (it prints its usage and exits 99), but its usage says it has loaded.
"${perf_env[@]}" "$perf" --help >perf-help.log 2>&1 || true
if [ -z "$perf_why" ] && ! grep -q -- --concurrency-range perf-help.log; then
  perf_why="$perf does not run: $(head -1 perf-help.log) (libb64-0d? libcudart.so.12?)"
fi
# The same users' rows for both clients: their rated movies (at most 50) as 1.0 in the input
# layer's columns (features.idx), dense, as FP32; the first 200 users.
model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["Name"])' \
        "$root/configs/recommender-autoencoder/network.json" 2>/dev/null || echo model)
start_server serve-oip.log --max-batch 256 --max-delay-ms 2 --grpc-port 0
grpc_port=$(grep -o "gRPC listening on 127.0.0.1:[0-9]*" serve-oip.log | grep -o '[0-9]*$')
meta=$(curl -s "127.0.0.1:$port/v2/models/$model")
units=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["inputs"][0]["shape"][1])' "$meta")
python3 - "$ratings" features.idx "$units" oip-requests.jsonl oip-data.json <<'PY'
import csv, json, sys
ratings, index, units, bodies, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:]
column = dict(line.rstrip("\n").split("\t")[:2] for line in open(index) if "\t" in line)
users = {}
with open(ratings, newline="") as f:
    for row in csv.reader(f):
        if row and row[0].isdigit():
            users.setdefault(row[0], []).append(row[1])
rows = []
for items in list(users.values())[:200]:
    row = [0] * units
    for item in items[:50]:
        row[int(column[item])] = 1
    rows.append(row)
with open(bodies, "w") as out:
    for row in rows:
        out.write(json.dumps({"inputs": [{"name": "Input", "shape": [1, units], "datatype": "FP32",
                                          "data": row}]}, separators=(",", ":")) + "\n")
# perf_analyzer wants FP32 data written as floats ("1.0", not "1").
json.dump({"data": [{"Input": [float(v) for v in row]} for row in rows]}, open(data, "w"),
          separators=(",", ":"))
PY
oip_results=$work/results-oip.jsonl
: >"$oip_results"
infer_path=/v2/models/$model/infer
"$load" --port "$port" --path "$infer_path" --bodies oip-requests.jsonl --clients 8 --requests 400 \
  --seconds 5 >/dev/null
for c in $clients; do
  line=$("$load" --port "$port" --path "$infer_path" --bodies oip-requests.jsonl --clients "$c" \
         --requests "$requests" --seconds "$seconds")
  echo "{\"client\": \"nn-bench-serve-load\", \"protocol\": \"HTTP, JSON\", ${line#\{}" |
    tee -a "$oip_results"
done
if [ -z "$perf_why" ]; then
  for form in http-json http-binary grpc; do
    url=127.0.0.1:$port proto=http label="HTTP, JSON"
    extra=(--input-tensor-format json --output-tensor-format json)
    case $form in
      http-binary) extra=() label="HTTP, binary" ;;  # Triton's binary tensor extension
      grpc) url=127.0.0.1:$grpc_port proto=grpc label=gRPC extra=() ;;
    esac
    for c in $clients; do
      rm -f perf.csv
      timeout 120 "${perf_env[@]}" "$perf" -m "$model" -u "$url" -i "$proto" \
        --input-data oip-data.json --concurrency-range "$c" --max-threads "$c" \
        --measurement-interval 2000 --max-trials 10 --stability-percentage 50 -f perf.csv \
        "${extra[@]}" \
        >"perf-$form-$c.log" 2>&1 || true
      python3 - perf.csv "$label" "$c" "perf-$form-$c.log" <<'PY' | tee -a "$oip_results"
import csv, json, re, sys
try:
    row = next(csv.DictReader(open(sys.argv[1])))
except (OSError, StopIteration):
    print(f"bench_serve: perf_analyzer {sys.argv[2]} {sys.argv[3]}: no result (see {sys.argv[4]})",
          file=sys.stderr)
    sys.exit(0)
# The requests of the measurement it reports (its last, stable windows).
counts = re.findall(r"Client:\s*\n\s*Request count: (\d+)", open(sys.argv[4]).read())
print(json.dumps({"client": "perf_analyzer", "protocol": sys.argv[2],
                  "clients": int(sys.argv[3]), "rate": 0,
                  "requests": int(counts[-1]) if counts else None,
                  "rps": float(row["Inferences/Second"]),
                  "p50_ms": float(row["p50 latency"]) / 1000, "p99_ms": float(row["p99 latency"]) / 1000}))
PY
    done
  done
else
  echo "bench_serve: no perf_analyzer rows: $perf_why" | tee perf-skipped.txt
fi
stop_server

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
echo
echo "POST /v2/models/$model/infer, one dense FP32 row of $units a request, batching 256 rows / 2 ms:"
python3 - "$oip_results" <<'PY'
import json, sys
print("| client | protocol | clients | requests | req/s | p50 ms | p99 ms |")
print("|---|---|---:|---:|---:|---:|---:|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    n = r["requests"] if r["requests"] is not None else "(windows)"
    print(f"| {r['client']} | {r['protocol']} | {r['clients']} | {n} | {r['rps']:.0f} | "
          f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
PY
[ -f perf-skipped.txt ] && cat perf-skipped.txt || true
