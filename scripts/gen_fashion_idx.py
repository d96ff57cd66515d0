#!/usr/bin/env python3
"""Writes Fashion-MNIST-format files (gzip IDX: train- and t10k- images and labels) of generated
images, for the CNN benchmark where the real data is not at hand (scripts/gpu-check.sh on the GPU
machine): ten classes of 28x28 bytes, each a stripe direction and a brightness plus noise, so the
network learns something, and speed is measured on the real network's shapes.

Usage: gen_fashion_idx.py OUT_DIR TRAIN_IMAGES [TEST_IMAGES (default 2000)]
"""
import gzip
import random
import struct
import sys


def write(out, counts):
    random.seed(4)
    for part, n in zip(("train", "t10k"), counts):
        labels = bytes(random.randrange(10) for _ in range(n))
        images = bytearray()
        for k in labels:
            stripes = [((y if k < 5 else x) // 3) % 2 for y in range(28) for x in range(28)]
            noise = random.randbytes(784)
            images += bytes(min(255, (60 + 18 * k if s else 30) + noise[i] % 40)
                            for i, s in enumerate(stripes))
        with gzip.open(f"{out}/{part}-images-idx3-ubyte.gz", "wb", compresslevel=1) as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28) + bytes(images))
        with gzip.open(f"{out}/{part}-labels-idx1-ubyte.gz", "wb", compresslevel=1) as f:
            f.write(struct.pack(">II", 0x801, n) + labels)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[-1])
    write(sys.argv[1], (int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) == 4 else 2000))
