#!/usr/bin/python3
"""PyTorch peer of the Fashion-MNIST samples: the same MLP and CNN as
configs/image-mlp-28x28 and configs/image-cnn-28x28 (network.json), trained the same way (Adam,
the same minibatch, learning-rate schedule and epochs as their train.cdl), reporting test
accuracy and seconds per epoch for scripts/fashion_mnist_quality.sh to print next to the engine's
numbers.

  mlp: 784 -> 512 ReLU -> 256 ReLU -> 10 softmax
  cnn: 28x28x1 -> conv 5x5x32 'same' ReLU -> max pool 2x2/2 -> conv 3x3x64 'same' ReLU
       -> max pool 2x2/2 -> 128 ReLU -> 10 softmax
Inputs are scaled as the engine scales 8-bit data (x/256 - 0.5); loss is softmax cross entropy.
One epoch = every training image once in a fresh random order; its time covers the forward and
backward passes, the optimizer steps and batch assembly, not decoding the files.
Output: one JSON object per model on stdout.
Usage: fashion_mnist_peer.py [--models mlp,cnn] [--epochs-mlp 10] [--epochs-cnn 8] ...
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

# Spinning OpenMP waits make torch several times slower on a busy shared machine (see
# scripts/movielens_peer.py); must be set before torch loads its OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def mlp():
    return torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 7 * 7, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))


def train(name, model, data, epochs, batch, alpha, interval, multiplier):
    x_train, y_train, x_test, y_test = data
    opt = torch.optim.Adam(model.parameters(), lr=alpha)
    # The CDL schedule: the rate is multiplied by `multiplier` every `interval` epochs.
    schedule = torch.optim.lr_scheduler.StepLR(opt, interval, multiplier) if interval else None
    loss_fn = torch.nn.CrossEntropyLoss()
    seconds = []
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(x_train))
        start = time.perf_counter()
        for pos in range(0, len(x_train), batch):
            ids = perm[pos:pos + batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x_train[ids]), y_train[ids]).backward()
            opt.step()
        seconds.append(time.perf_counter() - start)
        if schedule:
            schedule.step()
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum())
                      for i in range(0, len(x_test), 1000))
    return {"model": name, "framework": f"torch {torch.__version__}", "epochs": epochs,
            "minibatch": batch, "alpha": alpha, "alpha_interval": interval,
            "alpha_multiplier": multiplier, "examples": len(x_train),
            "seconds_per_epoch": sum(seconds) / len(seconds), "epoch_seconds": seconds,
            "test_accuracy": correct / len(x_test)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--models", default="mlp,cnn")
    ap.add_argument("--epochs-mlp", type=int, default=10)
    ap.add_argument("--epochs-cnn", type=int, default=8)
    ap.add_argument("--batch-mlp", type=int, default=64)
    ap.add_argument("--batch-cnn", type=int, default=64)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--alpha-interval-mlp", type=int, default=5)
    ap.add_argument("--alpha-interval-cnn", type=int, default=4)
    ap.add_argument("--alpha-multiplier", type=float, default=0.3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    scale = lambda t: t.float().div_(256.0).sub_(0.5).unsqueeze(1)
    x_train = scale(read_idx(f"{args.data}/train-images-idx3-ubyte.gz"))
    y_train = read_idx(f"{args.data}/train-labels-idx1-ubyte.gz").long()
    x_test = scale(read_idx(f"{args.data}/t10k-images-idx3-ubyte.gz"))
    y_test = read_idx(f"{args.data}/t10k-labels-idx1-ubyte.gz").long()
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    data = (x_train, y_train, x_test, y_test)
    for name in filter(None, args.models.split(",")):
        if name == "mlp":
            result = train("mlp", mlp(), data, args.epochs_mlp, args.batch_mlp, args.alpha,
                           args.alpha_interval_mlp, args.alpha_multiplier)
        elif name == "cnn":
            result = train("cnn", cnn(), data, args.epochs_cnn, args.batch_cnn, args.alpha,
                           args.alpha_interval_cnn, args.alpha_multiplier)
        else:
            sys.exit(f"unknown model {name!r}; expected mlp or cnn")
        json.dump(result, sys.stdout)
        print(flush=True)


if __name__ == "__main__":
    main()
