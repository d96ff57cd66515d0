#!/usr/bin/env python3
"""The autoencoder benchmark's table from bench.jsonl (the GPU check's speed call).

Reads the JSON lines of nn-bench-autoencoder (engine "nn") and scripts/bench_peer_torch.py
(engine "torch") and prints, per shape, one row per engine, mode, input and precision: ms per
minibatch, seconds per ML-20M epoch (541 minibatches), nn's floor and the share of it reached,
TFLOP/s; then which PyTorch configuration was fastest and how many times faster nn's fastest
precision is (the GPU issue's aim: 3x). Lines that are not JSON objects are skipped.

Usage: bench_table.py bench.jsonl
"""

import json
import sys

EPOCH_BATCHES = 541  # ceil(138,493 / 256)


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "ms_per_batch" in r:
                rows.append(r)
    return rows


def shape_of(r):
    if r.get("shape"):
        return r["shape"]
    return "ml20m-" + str(r.get("hidden", "?")).removesuffix("x1")


# Short labels of the opt-in CUDA paths (docs/cuda-backend.md, "Paths and their switches").
PATH_LABELS = {"padded-rows": "pad", "side-uploads": "side", "bias-epilogue": "epi",
               "multi-tensor-optimizer": "multi", "sync-free-sparse-loss": "nosync",
               "presorted-targets": "presort", "row-sparse-updates": "rows", "peer-backends": "peer",
               "graphs": "graph"}


def label(r):
    if r.get("engine") == "nn":
        if "opt_in" in r:
            # "+rows": the row ran with that opt-in path on; "-epi": with that default path off
            # (since 2026-12-04); none: the default paths.
            names = [PATH_LABELS.get(p, p) for p in r["opt_in"]]
            off = [PATH_LABELS.get(p, p) for p in r.get("paths_off", [])]
            every = r["all_on"] if "all_on" in r else len(names) == len(PATH_LABELS)
            variant = " all-on" if every else "".join(f" +{n}" for n in names) + "".join(
                f" -{n}" for n in off)
            return "nn " + r.get("backend", "") + variant
        # Rows saved before the paths were opt-in (2026-12-02 and earlier) named the variants
        # that turned a path off, each by a field of its own.
        variant = " graph" if r.get("cuda_graphs") else ""
        variant += " -epi" if r.get("bias_epilogue") is False else ""
        variant += " -side" if r.get("side_uploads") is False else ""
        variant += " -pad" if r.get("backend") == "cuda" and r.get("padded_rows") is False else ""
        return "nn " + r.get("backend", "") + variant
    return "torch " + r.get("mode", "compile" if r.get("compiled") else "eager")


def precision(r):
    return (r.get("precision") or r.get("math") or "fp32").lower().replace("-autocast", "")


def table(rows):
    out = []
    shapes = list(dict.fromkeys(shape_of(r) for r in rows))
    head = (f"{'shape':<14} {'engine':<22} {'input':<6} {'math':<5} {'ms/batch':>9} {'s/epoch':>8}"
            f" {'floor ms':>9} {'of floor':>9} {'TFLOP/s':>8}")
    out.append(head)
    for shape in shapes:
        group = [r for r in rows if shape_of(r) == shape]
        group.sort(key=lambda r: (r.get("engine") != "nn", label(r), r.get("input", "sparse"),
                                  precision(r)))
        for r in group:
            ms = r["ms_per_batch"]
            floor = r.get("floor_ms")
            share = f"{100 * floor / ms:.0f}%" if floor and ms > 0 else ""
            tflops = r.get("gflops", 0) / 1e3
            out.append(f"{shape:<14} {label(r):<22} {r.get('input', 'sparse'):<6} "
                       f"{precision(r):<5} {ms:>9.3f} {ms * EPOCH_BATCHES / 1e3:>8.3f} "
                       f"{(f'{floor:.3f}' if floor else ''):>9} {share:>9} {tflops:>8.2f}")
        ours = [r for r in group if r.get("engine") == "nn"]
        peers = [r for r in group if r.get("engine") != "nn"]
        if ours and peers:
            # What a user gets: the default paths (a row without a variant in its label), else
            # the fastest row when none ran with them.
            plain = [r for r in ours if label(r) == "nn " + r.get("backend", "")]
            best = min(plain or ours, key=lambda r: r["ms_per_batch"])
            fastest = min(peers, key=lambda r: r["ms_per_batch"])
            ratio = fastest["ms_per_batch"] / best["ms_per_batch"]
            which = "default paths" if plain else label(best)
            out.append(f"{shape:<14} fastest PyTorch: {label(fastest)} {precision(fastest)} "
                       f"{fastest.get('input', 'sparse')} input, {fastest['ms_per_batch']:.3f} ms; "
                       f"nn ({which}) {precision(best)} {best['ms_per_batch']:.3f} ms: "
                       f"{ratio:.2f}x")
        elif ours:
            out.append(f"{shape:<14} (no PyTorch rows)")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rows = load(argv[1])
    if not rows:
        print("(no benchmark rows)")
        return 0
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
