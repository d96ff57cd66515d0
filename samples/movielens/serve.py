#!/usr/bin/python3
"""Serving sketch: a thread pool answers recommendation requests over ONE loaded Model. Each
worker thread holds its own nnsuite Evaluator (its own activation buffers, the model's weights
shared, no lock while predicting; the GIL is released during the forward pass).

    PYTHONPATH=build/python /usr/bin/python3 samples/movielens/serve.py \
        samples/movielens/work-python/network.nc [--threads 2]

A request is the list of movie columns a user has rated; the answer is the 10 best other movies.
Here the requests are made up from random users' histories.
"""

import argparse
import concurrent.futures
import threading
import time

import numpy as np
import scipy.sparse as sp

import nnsuite


class Recommender:
    def __init__(self, path, threads):
        self.model = nnsuite.Model.load(path)
        self.columns = self.model.layer(self.model.input_layers[0]).units
        self.local = threading.local()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads)

    def _evaluator(self):
        if not hasattr(self.local, "evaluator"):  # one per worker thread, made on first use
            self.local.evaluator = self.model.evaluator(max_batch=64)
        return self.local.evaluator

    def _answer(self, rated, k):
        cols = np.unique(np.asarray(rated, dtype=np.int64))
        x = sp.csr_matrix((np.ones(len(cols), np.float32), cols, [0, len(cols)]),
                          shape=(1, self.columns))
        idx, score = self._evaluator().predict(x, k=k, exclude=x)
        return idx[0], score[0]

    def submit(self, rated, k=10):
        return self.pool.submit(self._answer, rated, k)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("network")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=2000)
    args = ap.parse_args()
    rec = Recommender(args.network, args.threads)
    rng = np.random.default_rng(0)
    requests = [rng.choice(rec.columns, size=rng.integers(5, 50), replace=False)
                for _ in range(args.requests)]
    start = time.perf_counter()
    futures = [rec.submit(r) for r in requests]
    answers = [f.result() for f in futures]
    secs = time.perf_counter() - start
    print(f"{len(answers)} requests on {args.threads} threads: {len(answers) / secs:.0f} "
          f"requests/s")
    print("first answer (movie columns):", answers[0][0].tolist())


if __name__ == "__main__":
    main()
