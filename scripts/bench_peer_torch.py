#!/usr/bin/python3
"""PyTorch half of the sparse-autoencoder speed benchmark (the engine's half times the same shape).

Shape: MovieLens-20M-like autoencoder: 27,278 items, 144 distinct non-zeros per example drawn
without replacement from a Zipf-like popularity (p(rank r) ~ 1/(r+1)^s, s = 1), minibatch 256.
Network: sparse input -> sigmoid hidden layer(s) -> 27,278 sigmoid outputs; loss = sigmoid cross
entropy summed over all outputs against the same sparse example as target (implicit zeros), averaged
over the batch; one optimizer step per batch (RMSprop or plain SGD).

What one timed batch contains: building the dense 0/1 target from the example's indices, the sparse
input product, forward, loss, backward, optimizer step. Generating the random examples is not timed
(a pool of batches is drawn up front). Input layer variants (--input):
  sparse  torch.sparse.mm(COO batch [256 x items], W [items x H]); autograd gives the dense weight
          gradient X^T * delta from the sparse X (default: the fastest measured here)
  dense   scatter the batch into a dense [256 x items] 0/1 matrix, then an ordinary dense GEMM
  embedding         torch.nn.EmbeddingBag(mode="sum") over the example's items: a dense weight
                    gradient
  embedding-sparse  the same with sparse=True: a sparse weight gradient (SGD only)
FLOPs per batch (reported, so GFLOP/s compare with the engine): 2*m*n*k per GEMM, forward plus
backward (weight gradient, and the delta to the layer below except for the input layer); the input
layer is counted as sparse, 2*nnz*H for its forward product and 2*nnz*H for its weight gradient.
flops_dense_input gives the count if the input layer is counted as a dense GEMM instead.
Output: one JSON object per configuration on stdout (ms per batch: on the CPU the median of
--batches single steps after --warmup; on CUDA, PyTorch's best way, no read-back inside the
timed steps and blocks of steps timed between synchronisations, the median block's mean).
--variants runs eager/compile x FP32/TF32/BF16 autocast in one process (one import of torch). Timings need quiet cores: on a busy machine OpenMP's spinning waits slow torch
down several times; OMP_WAIT_POLICY=PASSIVE in the environment softens that (it is recorded in the
output, as omp_wait_policy) but the engine's half should then run with the same setting.
Measured on the 2-core development machine (torch 1.13 CPU, median of 20, two runs): 1x128
RMSprop 97-119 ms/batch with sparse input (120-132 dense), SGD 98-107 (119-127); 3x1024 RMSprop
477-560 ms (576-632 dense), SGD 380-451 (455-533). Sparse input is the faster honest choice.
"""

import argparse
import json
import os
from math import ceil as math_ceil
import statistics
import sys
import time

import torch

ITEMS = 27278
NNZ = 144
BATCH = 256


def parse_hidden(text):
    """'128' -> [128]; '1024x3' -> [1024, 1024, 1024] (size x number of layers)."""
    size, cross, count = text.lower().partition("x")
    try:
        layers = [int(size)] * (int(count) if cross else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--hidden {text!r}: expected SIZE or SIZExLAYERS") from None
    if not layers or layers[0] < 1:
        raise argparse.ArgumentTypeError(f"--hidden {text!r}: sizes and counts must be >= 1")
    return layers


def zipf_batches(count, batch, items, nnz, exponent, seed):
    """count batches of [batch, nnz] distinct item indices each."""
    gen = torch.Generator().manual_seed(seed)
    popularity = 1.0 / torch.arange(1, items + 1, dtype=torch.float64) ** exponent
    # Shuffle which item id is popular so popular ids are not all at the start of the row.
    popularity = popularity[torch.randperm(items, generator=gen)]
    probs = popularity.float().expand(batch, items).contiguous()
    return [torch.multinomial(probs, nnz, replacement=False, generator=gen) for _ in range(count)]


class SparseAutoEncoder(torch.nn.Module):
    """Input weights are stored input-major [items x H] (like the engine) for the sparse product."""

    def __init__(self, items, hidden, input_mode):
        super().__init__()
        self.items = items
        self.input_mode = input_mode
        bound = (6.0 / (items + hidden[0])) ** 0.5 / 2
        if input_mode.startswith("embedding"):
            # The layout users of recommenders reach for: the input weights as an EmbeddingBag
            # summing the rows of the example's items; "embedding-sparse" gives a sparse weight
            # gradient (only SGD, Adagrad and SparseAdam take one).
            self.embed = torch.nn.EmbeddingBag(items, hidden[0], mode="sum",
                                               sparse=input_mode == "embedding-sparse")
            torch.nn.init.uniform_(self.embed.weight, -bound, bound)
        else:
            self.w_in = torch.nn.Parameter(torch.empty(items, hidden[0]).uniform_(-bound, bound))
        self.b_in = torch.nn.Parameter(torch.zeros(hidden[0]))
        sizes = hidden + [items]
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, indices, dense_x):
        if self.input_mode == "sparse":
            rows = torch.arange(indices.shape[0], device=indices.device).repeat_interleave(
                indices.shape[1])
            coo = torch.sparse_coo_tensor(
                torch.stack([rows, indices.reshape(-1)]),
                torch.ones(indices.numel(), device=indices.device), (indices.shape[0], self.items))
            # FP32 even under --bf16 (torch has no BF16 sparse x dense product on the CPU; nn
            # keeps its sparse input product in FP32 too).
            with torch.autocast(indices.device.type, enabled=False):
                z = torch.sparse.mm(coo, self.w_in) + self.b_in
        elif self.input_mode.startswith("embedding"):
            with torch.autocast(indices.device.type, enabled=False):
                z = self.embed(indices) + self.b_in
        else:
            z = torch.addmm(self.b_in, dense_x, self.w_in)
        a = torch.sigmoid(z)
        for layer in self.layers[:-1]:
            a = torch.sigmoid(layer(a))
        return self.layers[-1](a)  # logits; the loss applies the sigmoid


INPUT_MODES = ("sparse", "dense", "embedding", "embedding-sparse")


def flop_counts(batch, items, hidden, nnz):
    """(sparse-input FLOPs, dense-input FLOPs) per batch, forward + backward."""
    sizes = hidden + [items]
    dense_layers = 0
    for a, b in zip(sizes[:-1], sizes[1:]):
        dense_layers += 3 * 2 * batch * a * b  # forward, weight gradient, delta to layer below
    sparse_input = 2 * 2 * batch * nnz * hidden[0]
    dense_input = 2 * 2 * batch * items * hidden[0]
    return dense_layers + sparse_input, dense_layers + dense_input


def run_config(hidden, optimizer_name, input_mode, math, compiled, args):
    """One configuration; math is fp32, tf32 or bf16 (autocast), compiled runs torch.compile."""
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
    torch.backends.cudnn.allow_tf32 = math == "tf32"
    bf16 = math == "bf16"
    model = SparseAutoEncoder(ITEMS, hidden, input_mode).to(device)
    forward = model
    if compiled:
        if not hasattr(torch, "compile"):
            raise RuntimeError(f"torch {torch.__version__} has no torch.compile (needs 2.0+)")
        # torch.compile of the whole forward pass; the sparse product may fall back to eager
        # (a graph break), which still counts as compiled for the rest.
        forward = torch.compile(model)
    if optimizer_name == "rmsprop":
        optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-8,
                                        weight_decay=args.weight_decay, foreach=True)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=args.weight_decay,
                                    foreach=True)
    pool = [b.to(device) for b in zipf_batches(min(args.pool, args.warmup + args.batches), BATCH,
                                               ITEMS, args.nnz, args.zipf, args.seed)]

    def step(indices):
        target = torch.zeros(BATCH, ITEMS, device=device).scatter_(1, indices, 1.0)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = forward(indices, target if input_mode == "dense" else None)
        logits = logits.float()
        loss = (torch.nn.functional.softplus(logits) - logits * target).sum() / BATCH
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    on_gpu = device.type == "cuda"
    losses = [step(pool[s % len(pool)]).item() for s in range(args.warmup)]
    times = []
    if on_gpu:
        # The GPU's best way: no read-back inside the timed steps (the loss stays on the device);
        # blocks of steps timed between synchronisations, ms per batch from each block's mean.
        blocks = max(1, min(5, args.batches // 10))
        per_block = max(1, args.batches // blocks)
        for b in range(blocks):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for s in range(per_block):
                loss = step(pool[(args.warmup + b * per_block + s) % len(pool)])
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3 / per_block)
        losses.append(loss.item())
    else:
        for s in range(args.batches):
            start = time.perf_counter()
            losses.append(step(pool[(args.warmup + s) % len(pool)]).item())
            times.append((time.perf_counter() - start) * 1e3)
    flops, flops_dense = flop_counts(BATCH, ITEMS, hidden, args.nnz)
    median = statistics.median(times)
    name = f"{hidden[0]}x{len(hidden)}"
    return {
        "bench": "sparse_autoencoder",
        "engine": "torch",
        "framework": f"torch {torch.__version__}",
        "shape": "ml20m-" + (name.removesuffix("x1")),
        "mode": "compile" if compiled else "eager",
        "hidden": name,
        "optimizer": optimizer_name,
        "input": input_mode,
        "items": ITEMS,
        "batch": BATCH,
        "nnz_per_example": args.nnz,
        "threads": torch.get_num_threads(),
        "device": str(device),
        "math": "bf16-autocast" if bf16 else math,
        "precision": math,
        "compiled": bool(compiled),
        "timing": "blocks between synchronisations" if on_gpu else "per step",
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "warmup": args.warmup,
        "batches": args.batches,
        "ms_per_batch": round(median, 3),
        "ms_min": round(min(times), 3),
        "ms_max": round(max(times), 3),
        "s_per_epoch": round(median * math_ceil(138493 / BATCH) / 1e3, 4),
        "flops_per_batch": flops,
        "gflops": round(flops / median / 1e6, 2),
        "flops_dense_input": flops_dense,
        "first_loss": round(losses[0], 3),
        "last_loss": round(losses[-1], 3),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="bench_peer_torch.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__)
    parser.add_argument("--hidden", default="128",
                        help="comma list of SIZE or SIZExLAYERS, e.g. 128 or 1024x3 or 128,1024x3 "
                        "(default 128)")
    parser.add_argument("--optimizer", default="rmsprop",
                        help="comma list of rmsprop, sgd (default rmsprop)")
    parser.add_argument("--input", default="sparse",
                        help="comma list of " + ", ".join(INPUT_MODES) + " (default sparse)")
    parser.add_argument("--batches", type=int, default=20, help="timed batches (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed batches first (default 3)")
    parser.add_argument("--nnz", type=int, default=NNZ, help="non-zeros per example (default 144)")
    parser.add_argument("--zipf", type=float, default=1.0, help="popularity exponent (default 1)")
    parser.add_argument("--pool", type=int, default=16,
                        help="distinct random batches drawn up front and cycled (default 16)")
    parser.add_argument("--weight-decay", type=float, default=0.0,
                        help="L2 weight decay (default 0)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--seed", type=int, default=12134)
    parser.add_argument("--device", default="cpu",
                        help="torch device: cpu (default) or cuda[:N] (scripts/gpu-check.sh)")
    parser.add_argument("--bf16", action="store_true",
                        help="BF16 autocast of the forward pass (matrix products in BF16, FP32 "
                             "weights), to compare with nn's --precision bf16")
    parser.add_argument("--tf32", action="store_true",
                        help="allow TF32 tensor-core matrix products on CUDA (default: FP32)")
    parser.add_argument("--compile", action="store_true",
                        help="run the model through torch.compile (default: eager)")
    parser.add_argument("--variants", default="",
                        help="comma list of MODE-MATH to run in this one process (MODE eager or "
                             "compile, MATH fp32, tf32 or bf16), e.g. eager-fp32,compile-tf32; "
                             "replaces --bf16, --tf32 and --compile. A variant that fails prints "
                             "a JSON line with its error and the others still run")
    args = parser.parse_args(argv)
    variants = []
    if args.variants:
        for v in (x.strip().lower() for x in args.variants.split(",") if x.strip()):
            mode, _, math = v.partition("-")
            if mode not in ("eager", "compile") or math not in ("fp32", "tf32", "bf16"):
                parser.error(f"--variants: {v!r} is not MODE-MATH (eager|compile)-(fp32|tf32|bf16)")
            variants.append((math, mode == "compile"))
    else:
        variants.append(("bf16" if args.bf16 else "tf32" if args.tf32 else "fp32", args.compile))
    if not args.variants and args.compile and not hasattr(torch, "compile"):
        parser.error(f"--compile: torch {torch.__version__} has no torch.compile (needs 2.0+)")

    try:
        hidden_list = [parse_hidden(h) for h in args.hidden.split(",") if h]
    except argparse.ArgumentTypeError as err:
        parser.error(str(err))
    optimizers = [o.strip().lower() for o in args.optimizer.split(",") if o.strip()]
    inputs = [i.strip().lower() for i in args.input.split(",") if i.strip()]
    for name in optimizers:
        if name not in ("rmsprop", "sgd"):
            parser.error(f"--optimizer: unknown {name!r}; expected rmsprop or sgd")
    for name in inputs:
        if name not in INPUT_MODES:
            parser.error(f"--input: unknown {name!r}; expected one of {', '.join(INPUT_MODES)}")
    if args.batches < 1 or args.warmup < 0 or not 0 < args.nnz <= ITEMS:
        parser.error("--batches must be >= 1, --warmup >= 0, 0 < --nnz <= 27278")

    torch.set_num_threads(args.threads)
    for hidden in hidden_list:
        for optimizer_name in optimizers:
            for input_mode in inputs:
                for math, compiled in variants:
                    try:
                        result = run_config(hidden, optimizer_name, input_mode, math, compiled,
                                            args)
                    except Exception as err:  # one failed variant (e.g. compile) loses only itself
                        if not args.variants:
                            raise
                        result = {"engine": "torch", "hidden": f"{hidden[0]}x{len(hidden)}",
                                  "input": input_mode, "precision": math,
                                  "mode": "compile" if compiled else "eager",
                                  "error": f"{type(err).__name__}: {err}"[:300]}
                    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
