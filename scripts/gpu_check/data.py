"""The GPU check's data, generated where it runs: a recommender catalog of 1,003 items (not a
multiple of 8, so that a padded output layer really is padded) with held-out validation users,
and images in CIFAR-10's binary format."""

import json
import os
import random

ITEMS = 1003
USERS = 3000
VALIDATION_USERS = 350
TASTES = 7

NETWORK = {
    "Name": "gpu-check", "ErrorFunction": "CrossEntropy",
    "Layers": [
        {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": True},
        {"Name": "H1", "Kind": "Hidden", "N": 256, "Activation": "Sigmoid", "pDropout": 0.1},
        {"Name": "H2", "Kind": "Hidden", "N": 128, "Activation": "RectifiedLinear"},
        {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
         "Activation": "Sigmoid"}]}


def user_items(rng, taste):
    """25 items of the user's taste (60 items each) and 5 from anywhere, distinct, in draw order."""
    seen, items = set(), []
    for k in range(30):
        i = taste * 60 + rng.randrange(60) if k < 25 else rng.randrange(ITEMS)
        if i not in seen:
            seen.add(i)
            items.append(i)
    return items


def write_ratings(path, users):
    with open(path, "w") as f:
        for user, items in users:
            f.write(user + "\t" + ":".join(f"i{i}" for i in items) + "\n")


def make_recommender(folder, run):
    """ratings.txt, input.nc/output.nc with features.idx (every item: the first users cover the
    catalog), validation files (valid-input.nc: 20 items of each held-out user, valid-output.nc:
    the rest), and the networks. `run(argv, log)` runs a tool; returns True when all succeeded."""
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(11)
    users = []
    for u in range(USERS):
        items = user_items(rng, u % TASTES)
        if u < ITEMS // 5 + 1:  # the catalog in full: every item appears in training
            items = items[:-1] + [i for i in range(u * 5, min(ITEMS, u * 5 + 5)) if i not in items]
        users.append((f"u{u}", items))
    write_ratings(os.path.join(folder, "ratings.txt"), users)
    held_in, held_out = [], []
    for u in range(USERS, USERS + VALIDATION_USERS):
        items = user_items(rng, u % TASTES)
        held_in.append((f"u{u}", items[:20]))
        held_out.append((f"u{u}", items[20:]))
    write_ratings(os.path.join(folder, "valid-input.txt"), held_in)
    write_ratings(os.path.join(folder, "valid-output.txt"), held_out)
    gen = lambda *a: run(["nn-generate", "-q", "--align", "1"] + list(a), "generate")
    ok = (gen("-d", "input", "-i", "ratings.txt", "-o", "input.nc", "-f", "features.idx", "-s",
              "samples.idx", "-c") == 0 and
          gen("-d", "output", "-i", "ratings.txt", "-o", "output.nc", "-f", "features.idx", "-s",
              "samples.idx") == 0 and
          gen("-d", "input", "-i", "valid-input.txt", "-o", "valid-input.nc", "-f",
              "features.idx", "-s", "valid-samples.idx") == 0 and
          gen("-d", "output", "-i", "valid-output.txt", "-o", "valid-output.nc", "-f",
              "features.idx", "-s", "valid-samples.idx") == 0)
    net = json.loads(json.dumps(NETWORK))
    write_json(os.path.join(folder, "net.json"), net)
    # Without dropout, for the gradient check and the Python module's comparison.
    del net["Layers"][1]["pDropout"]
    write_json(os.path.join(folder, "net-check.json"), net)
    # The sampled output: 128 negatives of the catalog's 1,003 items, SoftMax.
    sampled = json.loads(json.dumps(NETWORK))
    sampled["Layers"][3].update(Activation="SoftMax",
                                Sampling={"Negatives": 128, "Distribution": "Popularity"})
    write_json(os.path.join(folder, "net-sampled.json"), sampled)
    return ok


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


def make_cifar(path, images, seed=3):
    """Ten easy classes (a colour and a stripe direction each, 1,500 of 3,072 bytes replaced by
    noise), in CIFAR-10's binary format: a label byte, then 3 planes of 32x32."""
    rng = random.Random(seed)
    palette = [(200, 40, 40), (40, 200, 40), (40, 40, 200), (200, 200, 40), (200, 40, 200),
               (40, 200, 200), (220, 120, 40), (120, 40, 220), (120, 120, 120), (230, 230, 230)]
    bases = []
    for k in range(10):
        planes = bytearray()
        for c in range(3):
            for y in range(32):
                for x in range(32):
                    stripe = (y if k < 5 else x) // 4 % 2
                    planes.append(max(0, min(255, palette[k][c] + (30 if stripe else -30))))
        bases.append(bytes(planes))
    with open(path, "wb") as f:
        for _ in range(images):
            k = rng.randrange(10)
            img = bytearray(bases[k])
            noise = rng.randbytes(3072)
            for i in rng.sample(range(3072), 1500):
                img[i] = noise[i]
            f.write(bytes([k]) + bytes(img))


# An autoencoder of images: dense targets (the images themselves, 3,072 values a row) on an output
# layer whose rows the CUDA run pads (NN_CUDA_ROW_ALIGN=1000: rows of 4,000 floats).
IMAGE_AUTOENCODER = {
    "Name": "gpu-check-dense", "ErrorFunction": "L2",
    "Layers": [
        {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
        {"Name": "Hidden", "Kind": "Hidden", "N": 64, "Activation": "Sigmoid"},
        {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "input",
         "Activation": "Sigmoid"}]}
