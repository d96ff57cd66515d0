#!/usr/bin/python3
"""The MovieLens sample from Python: ratings CSV -> SciPy CSR matrix -> nnsuite training -> the
top 10 unrated movies per user, and a loss-curve PNG when matplotlib is installed.

    PYTHONPATH=build/python /usr/bin/python3 samples/movielens/train.py [--epochs N] [-o DIR]

(or `pip install .` first, see docs/python.md). The network and training settings are those of
configs/recommender-autoencoder (what samples/movielens/run.sh runs through the tools), with the
data handed over as arrays instead of NetCDF files.
"""

import argparse
import csv
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

import nnsuite

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_ratings(path):
    """(CSR users x movies indicator matrix, user ids, movie ids)."""
    users, movies = [], []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if row and row[0].isdigit():
                users.append(int(row[0]))
                movies.append(int(row[1]))
    user_ids, u = np.unique(np.array(users), return_inverse=True)
    movie_ids, m = np.unique(np.array(movies), return_inverse=True)
    x = sp.csr_matrix((np.ones(len(u), np.float32), (u, m)),
                      shape=(len(user_ids), len(movie_ids)), dtype=np.float32)
    x.sum_duplicates()
    x.data[:] = 1.0  # a movie rated twice is still one rating
    return x, user_ids, movie_ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ratings", default=os.path.join(HERE, "ratings.csv"))
    ap.add_argument("--movies", default=os.path.join(HERE, "movies.csv"))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("-o", "--output-dir", default=os.path.join(HERE, "work-python"))
    args = ap.parse_args()
    os.makedirs(args.output_dir, exist_ok=True)

    x, user_ids, movie_ids = read_ratings(args.ratings)
    print(f"{x.shape[0]} users, {x.shape[1]} movies, {x.nnz} ratings")
    net = os.path.join(ROOT, "configs", "recommender-autoencoder", "network.json")
    model = nnsuite.Model.from_json(net, datasets={"input": x, "output": x}, seed=args.seed)
    trainer = nnsuite.Trainer(model, {"input": x, "output": x}, epochs=args.epochs, minibatch=32,
                              optimizer="RMSProp", alpha=0.001, mu=0.99, mu1=0.999,
                              lambda_=0.001, seed=args.seed)
    losses = []

    def report(s):
        losses.append(s["loss"])
        print(f"epoch {s['epoch']:3d}  loss {s['loss']:.5f}  "
              f"{s['examples_per_second']:.0f} examples/s", flush=True)
        return True  # return False to stop early

    start = time.time()
    trainer.run(callback=report)
    print(f"trained in {time.time() - start:.1f} s")
    model.save(os.path.join(args.output_dir, "network.nc"))

    idx, score = model.predict(x, k=10, exclude=x)  # rated movies are left out
    titles = {}
    if os.path.exists(args.movies):
        with open(args.movies, newline="", encoding="utf-8") as f:
            titles = {int(r[0]): r[1] for r in csv.reader(f) if r and r[0].isdigit()}
    with open(os.path.join(args.output_dir, "recs"), "w") as f:
        for row, user in enumerate(user_ids):
            f.write(f"{user}\t" + "".join(f"{movie_ids[i]},{s:.4f}:"
                                          for i, s in zip(idx[row], score[row])) + "\n")
    for row in range(3):
        print(f"user {user_ids[row]}:")
        for i, s in zip(idx[row], score[row]):
            movie = int(movie_ids[i])
            print(f"  {s:.4f}  {titles.get(movie, f'movie {movie}')}")
    print(f"wrote {args.output_dir}/network.nc and {args.output_dir}/recs")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no loss-curve PNG")
        return 0
    plt.plot(range(1, len(losses) + 1), losses)
    plt.xlabel("epoch")
    plt.ylabel("training loss")
    plt.title("MovieLens autoencoder (nnsuite)")
    png = os.path.join(args.output_dir, "loss.png")
    plt.savefig(png, dpi=100)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
