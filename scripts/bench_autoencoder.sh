#!/usr/bin/env bash
# Speed benchmark: MovieLens-20M-shaped sparse autoencoder (27,278 items, ~144 non-zeros per
# example, batch 256), hidden 1x128 and 3x1024 sigmoid, RMSProp; our engine (CPU backend) next to
# PyTorch CPU (Debian's python3-torch, 2 threads) in the same run, plus GFLOP/s vs gemm peak.
# With --bf16 (on a CPU with AVX512-BF16) each shape also runs our --precision bf16 and PyTorch's
# BF16 autocast, and the table gives BF16's speed-up over our FP32 (docs/wide-outputs.md).
# --repeat N runs every configuration N times, interleaved, and the table shows each one's median
# run (the development VM's speed swings by 2x with its neighbours' load, so one run of each can
# mislead).
# Usage: scripts/bench_autoencoder.sh [--batches N] [--optimizer RMSProp|SGD|...] [--bf16]
#        [--repeat N]
# Run it on an otherwise idle machine; it prints a table and the raw JSON lines.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib/blas_kernels.sh"  # the same OpenBLAS kernels for nn and its peer
batches=20
optimizer=RMSProp
precisions=fp32
repeat=1
while [ $# -gt 0 ]; do
  case $1 in
    --batches) batches=$2; shift 2 ;;
    --optimizer) optimizer=$2; shift 2 ;;
    --bf16) precisions="fp32 bf16"; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    *) echo "usage: $0 [--batches N] [--optimizer NAME] [--bf16] [--repeat N]" >&2; exit 2 ;;
  esac
done
bench=${NN_BUILD_DIR:-$root/build}/bench/nn-bench-autoencoder
[ -x "$bench" ] || bash "$root/scripts/setup.sh" nn-bench-autoencoder
threads=$(nproc)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for hidden in 128 1024x3; do
  for run in $(seq "$repeat"); do
    for precision in $precisions; do
      "$bench" --hidden "$hidden" --batches "$batches" --optimizer "$optimizer" \
        --threads "$threads" --precision "$precision" >> "$results"
      torch_math=()
      [ "$precision" = bf16 ] && torch_math=(--bf16)
      /usr/bin/python3 "$root/scripts/bench_peer_torch.py" --hidden "$hidden" --batches "$batches" \
        --optimizer "$(echo "$optimizer" | tr 'A-Z' 'a-z')" --threads "$threads" \
        "${torch_math[@]}" >> "$results"
    done
  done
done
/usr/bin/python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
def key(r): return str(r.get("hidden")).removesuffix("x1")
def engine(r): return r.get("engine") or r.get("framework", "torch").split()[0]
def math(r): return (r.get("precision") or r.get("math", "fp32")).lower().replace("-autocast", "")
print(f"{'hidden':>8} {'engine':>8} {'math':>5} {'ms/batch':>9} {'GFLOP/s':>8} {'gemm peak':>10} "
      f"{'vs torch fp32':>14} {'vs nn fp32':>11}")
def median_runs(group):
    """One row per (engine, math): the run with the median ms per batch."""
    out = []
    for k in dict.fromkeys((engine(r), math(r)) for r in group):
        runs = sorted((r for r in group if (engine(r), math(r)) == k), key=lambda r: r["ms_per_batch"])
        out.append(runs[(len(runs) - 1) // 2])
    return out
for h in sorted({key(r) for r in rows}, key=lambda s: (len(s), s)):
    ours = median_runs([r for r in rows if key(r) == h and engine(r) == "nn"])
    peer = median_runs([r for r in rows if key(r) == h and engine(r) != "nn"])
    torch32 = [r for r in peer if math(r) == "fp32"]
    nn32 = [r for r in ours if math(r) == "fp32"]
    for r in ours + peer:
        ratio = f"{torch32[0]['ms_per_batch'] / r['ms_per_batch']:.2f}x" if torch32 else ""
        own = f"{nn32[0]['ms_per_batch'] / r['ms_per_batch']:.2f}x" if nn32 else ""
        peak = r.get("gemm_peak_gflops", "")
        print(f"{h:>8} {engine(r):>8} {math(r):>5} {r['ms_per_batch']:>9.1f} {r.get('gflops', 0):>8.1f} "
              f"{peak if peak == '' else format(peak, '.1f'):>10} {ratio:>14} {own:>11}")
print()
for r in rows: print(json.dumps(r))
PY
