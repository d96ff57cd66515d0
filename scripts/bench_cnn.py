#!/usr/bin/python3
"""PyTorch half of the Fashion-MNIST CNN benchmark (the engine's half, nn-bench-cnn, trains the
same network on the same data).

Network (the same in both halves):
  input 28x28x1 (bytes scaled to x/256 - 0.5, as the engine normalises 8-bit data)
  -> conv 5x5, 32 channels, stride 1, 'same' padding, ReLU -> max pool 2x2 stride 2
  -> conv 3x3, 64 channels, stride 1, 'same' padding, ReLU -> max pool 2x2 stride 2
  -> fully connected 128, ReLU -> fully connected 10, softmax; cross entropy; Adam; batch 64.
One epoch = every training example once in a random order (the last batch may be short).
Reported: seconds per epoch (each epoch timed separately: forward, loss, backward, optimizer
step; batch assembly included, data decoding not), CPU seconds per epoch (user + system, all
threads: comparable between the two halves on a busy machine, where wall times are not), and test
accuracy after the last epoch.
Output: one JSON object on stdout.
"""

import argparse
import gzip
import json
import struct
import sys
import time

import torch


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


class Cnn(torch.nn.Module):
    def __init__(self, c1, c2, hidden):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, c1, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(c1, c2, 3, padding=1)
        self.fc1 = torch.nn.Linear(c2 * 7 * 7, hidden)
        self.fc2 = torch.nn.Linear(hidden, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--alpha", type=float, default=1e-3)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N examples only")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda[:N]")
    args = ap.parse_args()
    device = torch.device(args.device)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    scale = lambda t: t.float().div_(256.0).sub_(0.5).unsqueeze(1)
    x_train = scale(read_idx(f"{args.data}/train-images-idx3-ubyte.gz"))
    y_train = read_idx(f"{args.data}/train-labels-idx1-ubyte.gz").long()
    x_test = scale(read_idx(f"{args.data}/t10k-images-idx3-ubyte.gz"))
    y_test = read_idx(f"{args.data}/t10k-labels-idx1-ubyte.gz").long()
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    x_train, y_train = x_train.to(device), y_train.to(device)
    x_test, y_test = x_test.to(device), y_test.to(device)

    model = Cnn(32, 64, 128).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.alpha)
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch_seconds, cpu_seconds = [], 0.0
    for _ in range(args.epochs):
        model.train()
        perm = torch.randperm(len(x_train), device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        start, cpu_start = time.perf_counter(), time.process_time()
        for pos in range(0, len(x_train), args.batch):
            ids = perm[pos:pos + args.batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[ids]), y_train[ids])
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()  # the epoch's work has finished, not just been queued
        epoch_seconds.append(time.perf_counter() - start)
        cpu_seconds += time.process_time() - cpu_start
    model.eval()
    with torch.no_grad():
        correct = sum(int((model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum())
                      for i in range(0, len(x_test), 1000))
    json.dump({"engine": "torch", "framework": f"torch {torch.__version__}", "device": str(device),
               "threads": args.threads, "examples": len(x_train), "epochs": args.epochs,
               "seconds_per_epoch": epoch_seconds,
               "cpu_seconds_per_epoch": cpu_seconds / args.epochs,
               "test_accuracy": correct / len(x_test)}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
