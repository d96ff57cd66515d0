#!/usr/bin/env bash
# Row-sparse against dense input updates, in one process and under mpirun -np 2 (data parallel):
# a planted 200,000-item autoencoder (the items as the input, 128 Tanh units, SoftMax output
# sampled with 2,048 Popularity negatives, RMSProp, whose exact row-sparse update equals the
# dense one: the losses must agree), 8,192 users, one epoch of minibatches of 256, one thread per
# rank. Prints each run's loss and examples per second with the load average at its start
# (docs/wide-outputs.md, "Row-sparse input updates").
# Usage: scripts/bench_row_sparse_mpi.sh     NN_TOOLS (default build/src/tools), NN_BENCH_DIR
#        (default out/bench-row-sparse-mpi)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$(realpath "${NN_TOOLS:-$root/build/src/tools}")
work=${NN_BENCH_DIR:-$root/out/bench-row-sparse-mpi}
command -v mpirun > /dev/null || { echo "bench_row_sparse_mpi: no mpirun" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
python3 "$root/scripts/bench_sampled.py" gen . 200000 100 40 8192 500 16384 1.0 7 > /dev/null
"$tools/nn-generate" -q -d output -i all_items.txt -o catalog.nc -f items.idx -s catalog.idx -c --align 1
"$tools/nn-generate" -q -d output -i train_out.txt -o train_out.nc -f items.idx -s train.idx -m --align 1
"$tools/nn-generate" -q -d input -i all_items.txt -o catalog.nc -f items.idx -s catalog2.idx -c --align 1
"$tools/nn-generate" -q -d input -i train_out.txt -o train_in.nc -f items.idx -s train.idx -m --align 1
cat > net.json << 'JSON'
{ "Name": "rows", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 128, "Activation": "Tanh", "Parallel": "Data" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax",
      "Parallel": "Data", "Sampling": { "Negatives": 2048, "Distribution": "Popularity" } } ] }
JSON
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
printf '%-4s %-6s %6s %12s %11s\n' np update load loss examples/s
for np in 1 2; do
  for mode in Dense Exact; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    run=("$tools/nn-train" -c net.json -i train_in.nc -o train_out.nc -n net.nc -b 256 -e 1
         --optimizer RMSProp --alpha 0.003 --lambda 0 --seed 5 --checkpoint-interval 0
         --sparse-update "$mode" --threads 1)
    if [ "$np" = 1 ]; then "${run[@]}" 2> "log-$np-$mode.txt"
    else mpirun -np "$np" --oversubscribe "${run[@]}" 2> "log-$np-$mode.txt"; fi
    line=$(grep -m1 '^epoch 1/1: ' "log-$np-$mode.txt")
    printf '%-4s %-6s %6s %12s %11s\n' "$np" "$mode" "$load" \
      "$(sed -n 's/.*: loss \([0-9.]*\) .*/\1/p' <<< "$line")" \
      "$(sed -n 's/.*, \([0-9]*\) examples\/s.*/\1/p' <<< "$line")"
  done
done
