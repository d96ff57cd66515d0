#!/usr/bin/python3
"""How well can any recommender do on scripts/ml20m_shaped_ratings.sh's synthetic users? This
scores the test users of a held-out-user split of that file (scripts/bench_quality.sh's work
folder, or heldout_users_split.py's output) with the generator's own distribution, the ranking a
model that knew how the data was made would give, and prints the same metrics as
bench_quality.py, so the ceiling can be read beside EASE's row.

The generator (keep the constants below equal to its own): each item of a user is drawn, until
PER distinct items are held, with probability 1/2 from Zipf popularity over the catalog
(exponent 0.9) and 1/2 from the user's taste group g, one of 50 blocks of items/50 contiguous
items, where block offset k has probability sqrt((k+1)/w) - sqrt(k/w) (w = items/50). So a
draw's distribution given g is q_g = 1/2 pop + 1/2 group_g. The ranking here:
  posterior(g | input items) proportional to prod_i q_g(i) (uniform prior over the 50 groups),
  score(j) = sum_g posterior(g) q_g(j), input items excluded.
Treating the draws as independent (the generator draws without repeats) makes this the Bayes
ranking up to that approximation; with ~115 input items the posterior is all but certain.
Usage: ml20m_shaped_ceiling.py FOLD_DIR [--items 27278]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import movielens_eval as ev  # noqa: E402

PROG = "ml20m_shaped_ceiling.py"
GROUPS = 50
ZIPF_EXPONENT = 0.9
GROUP_SHARE = 0.5
CUTOFFS = (("recall@10", 10), ("recall@20", 20), ("recall@50", 50), ("ndcg@100", 100))


def draw_distributions(items):
    """groups x items: q_g, one draw's distribution for a user of taste group g."""
    pop = 1.0 / np.power(np.arange(items) + 1.0, ZIPF_EXPONENT)
    pop /= pop.sum()
    width = items // GROUPS
    offsets = np.arange(width)
    block = np.sqrt((offsets + 1) / width) - np.sqrt(offsets / width)
    group = np.zeros((GROUPS, items))
    for g in range(GROUPS):
        np.add.at(group[g], (g * width + offsets) % items, block)
    return (1 - GROUP_SHARE) * pop[None, :] + GROUP_SHARE * group


def training_items(path):
    """The item ids of the training users (the only ones a method fitted on them can rank)."""
    seen = set()
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            fields = line.strip().split(",")
            if line_no == 1 and fields[0] == "userId":
                continue
            if len(fields) != 4:
                raise ev.InputError(f"{path}:{line_no}: expected userId,movieId,rating,timestamp")
            seen.add(fields[1])
    return seen


def ceiling_recs(fold_in, q, allowed, top=100):
    log_q = np.log(q)
    recs = {}
    for user, items in fold_in.items():
        idx = np.array([int(m) for m in items])
        if idx.size and (idx.min() < 0 or idx.max() >= q.shape[1]):
            raise ev.InputError(f"user {user}: an item id outside 0..{q.shape[1] - 1}; is this "
                                "a split of ml20m_shaped_ratings.sh's output with --items?")
        log_post = log_q[:, idx].sum(axis=1)
        post = np.exp(log_post - log_post.max())
        scores = (post / post.sum()) @ q + allowed
        scores[idx] = -np.inf
        recs[user] = [str(j) for j in np.argsort(-scores, kind="stable")[:top]]
    return recs


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("fold", help="a split's fold folder: train.csv, test_tr.csv, test_te.csv "
                        "(e.g. out/bench-quality/data/fold0 after bench_quality.sh ml20m-shaped.csv)")
    parser.add_argument("--items", type=int, default=27278,
                        help="the generator's ITEMS (default 27278)")
    parser.add_argument("--part", default="test", choices=("test", "val"),
                        help="which held-out users to score (default test)")
    args = parser.parse_args(argv)
    try:
        q = draw_distributions(args.items)
        allowed = np.full(args.items, -np.inf)
        for m in training_items(os.path.join(args.fold, "train.csv")):
            if 0 <= int(m) < args.items:
                allowed[int(m)] = 0.0
        fold_in = ev.read_ratings(os.path.join(args.fold, f"{args.part}_tr.csv"))
        truth = ev.read_ratings(os.path.join(args.fold, f"{args.part}_te.csv"))
        recs = ceiling_recs(fold_in, q, allowed)
    except (OSError, ValueError, ev.InputError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    header = f"{'method':<10}" + "".join(f"{n:>12}" for n, _ in CUTOFFS)
    row, users = f"{'ceiling':<10}", 0
    for name, k in CUTOFFS:
        m = ev.evaluate(recs, fold_in, truth, k)
        row += f"{m[name]:>12.4f}"
        users = m["users"]
    print(header)
    print(row)
    print(f"({users} {args.part} users)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
