#!/usr/bin/env bash
# Speed benchmark: MovieLens-20M-shaped sparse autoencoder (27,278 items, ~144 non-zeros per
# example, batch 256), hidden 1x128 and 3x1024 sigmoid, RMSProp; our engine (CPU backend) next to
# PyTorch on the CPU (2 threads) in the same run, plus GFLOP/s vs gemm peak. The peer is current
# PyTorch from PyPI (out/torch-venv, made by scripts/torch-venv.sh; NN_TORCH_PYTHON names another
# python), in every way a user could run it: eager and torch.compile, with the input layer as a
# sparse product, a dense product, an EmbeddingBag, and (with SGD) an EmbeddingBag with sparse
# gradients; the table names the fastest. Without the venv it falls back to Debian's
# python3-torch 1.13 and says so (3-4x slower than current PyTorch: not a fair peer).
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
torch_python=${NN_TORCH_PYTHON:-$root/out/torch-venv/bin/python}
if [ ! -x "$torch_python" ]; then
  echo "bench_autoencoder: no $torch_python (scripts/torch-venv.sh makes it); using Debian's" \
    "/usr/bin/python3, whose PyTorch 1.13 is several times slower than current PyTorch" >&2
  torch_python=/usr/bin/python3
fi
inputs=sparse,dense,embedding
modes="eager compile"
[ "$(echo "$optimizer" | tr 'A-Z' 'a-z')" = sgd ] && inputs=$inputs,embedding-sparse
"$torch_python" -c "import torch; assert hasattr(torch, 'compile')" 2>/dev/null || modes=eager
[ -x "$bench" ] || bash "$root/scripts/setup.sh" nn-bench-autoencoder
threads=$(nproc)
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for hidden in 128 1024x3; do
  for run in $(seq "$repeat"); do
    for precision in $precisions; do
      "$bench" --hidden "$hidden" --batches "$batches" --optimizer "$optimizer" \
        --threads "$threads" --precision "$precision" >> "$results"
      variants=""
      for mode in $modes; do variants=$variants${variants:+,}$mode-$precision; done
      "$torch_python" "$root/scripts/bench_peer_torch.py" --hidden "$hidden" --batches "$batches" \
        --optimizer "$(echo "$optimizer" | tr 'A-Z' 'a-z')" --threads "$threads" \
        --input "$inputs" --variants "$variants" >> "$results"
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
      f"{'vs torch fp32':>14} {'vs nn fp32':>11}  torch: its fastest way")
failed = [r for r in rows if "error" in r]
rows = [r for r in rows if "error" not in r]
def variant(r): return f"{r.get('mode', 'eager')}/{r.get('input', 'sparse')}" if engine(r) != "nn" else ""
def median_runs(group):
    """One row per (engine, math, variant): the run with the median ms per batch."""
    out = []
    for k in dict.fromkeys((engine(r), math(r), variant(r)) for r in group):
        runs = sorted((r for r in group if (engine(r), math(r), variant(r)) == k),
                      key=lambda r: r["ms_per_batch"])
        out.append(runs[(len(runs) - 1) // 2])
    return out
def fastest(group):
    """Of each math, the fastest variant's median run."""
    best = {}
    for r in median_runs(group):
        if math(r) not in best or r["ms_per_batch"] < best[math(r)]["ms_per_batch"]:
            best[math(r)] = r
    return list(best.values())
every_peer = []
for h in sorted({key(r) for r in rows}, key=lambda s: (len(s), s)):
    ours = median_runs([r for r in rows if key(r) == h and engine(r) == "nn"])
    every_peer += [(h, r) for r in median_runs([r for r in rows if key(r) == h and engine(r) != "nn"])]
    peer = fastest([r for r in rows if key(r) == h and engine(r) != "nn"])
    torch32 = [r for r in peer if math(r) == "fp32"]
    nn32 = [r for r in ours if math(r) == "fp32"]
    for r in ours + peer:
        ratio = f"{torch32[0]['ms_per_batch'] / r['ms_per_batch']:.2f}x" if torch32 else ""
        own = f"{nn32[0]['ms_per_batch'] / r['ms_per_batch']:.2f}x" if nn32 else ""
        peak = r.get("gemm_peak_gflops", "")
        name = f"  {r.get('framework', '')} {variant(r)}" if engine(r) != "nn" else ""
        print(f"{h:>8} {engine(r):>8} {math(r):>5} {r['ms_per_batch']:>9.1f} {r.get('gflops', 0):>8.1f} "
              f"{peak if peak == '' else format(peak, '.1f'):>10} {ratio:>14} {own:>11}{name}")
print()
print("every PyTorch way (median ms/batch):")
for h, r in every_peer:
    print(f"{h:>8} {math(r):>5} {variant(r):<26} {r['ms_per_batch']:>9.1f}")
for r in failed:
    print(f"{key(r):>8} {r.get('precision', ''):>5} {r.get('mode', '')}/{r.get('input', '')}: failed: {r['error']}")
print()
for r in rows: print(json.dumps(r))
PY
