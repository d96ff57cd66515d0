#!/usr/bin/python3
"""Held-out-user splits of a MovieLens ratings CSV in the protocol of Liang et al. 2018
("Variational Autoencoders for Collaborative Filtering", WWW 2018; their code: vae_cf), which is
also the protocol of EASE (Steck 2019), RecVAE and VASP ("strong generalisation").

* Ratings >= --min-rating (default 4) are the positives; every other rating is dropped.
* Users with at least --min-user-items positives (default 5) are kept.
* The users are shuffled (seed --seed). With --folds 1: --heldout users are the test users,
  --heldout more the validation users, the rest the training users (Liang's ML-20M setting:
  10,000 and 10,000). With --folds F > 1 (our extension for small data sets, where one test set of
  a few dozen users is too noisy to rank methods): the shuffled users are cut into F parts; fold
  f tests on part f, validates on part f+1 (mod F) and trains on the rest, so every user is a
  test user exactly once over the F folds.
* The items are those of the training users; held-out users' other items are dropped (no
  method could recommend them).
* Each held-out user with at least 5 of those items has int(0.2 * n) of them, chosen at random,
  as the items to find (`*_te`) and the rest as the input (`*_tr`) (Liang's
  split_train_test_proportion). A held-out user left with fewer items cannot be scored and is
  not written (in ML-20M there are almost none; keeping them out lets every `*_tr` file list the
  same users, in the same order, as its `*_te` file).

Writes, per fold, DIR/fold<f>/{train,val_tr,val_te,test_tr,test_te}.csv in the input's layout
(userId,movieId,rating,timestamp, with a header), so that every reader of MovieLens files
(nn-generate --rows --header, movielens_eval.read_ratings) reads them unchanged.
"""

import argparse
import os
import random
import sys

PROG = "heldout_users_split.py"


class InputError(Exception):
    """A malformed input line; the message names the file and line."""


def read_positives(path, min_rating):
    """{user: [(movie, line), ...]} of ratings >= min_rating, in file order (ids kept as text)."""
    users = {}
    header = "userId,movieId,rating,timestamp"
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split(",")
            if len(fields) != 4:
                raise InputError(f"{path}:{line_no}: found {len(fields)} comma-separated fields "
                                 f"in {line!r}; expected 4 (userId,movieId,rating,timestamp)")
            try:
                rating = float(fields[2])
            except ValueError:
                if line_no == 1:
                    header = line
                    continue
                raise InputError(f"{path}:{line_no}: rating {fields[2]!r} is not a number") from None
            if rating >= min_rating:
                users.setdefault(fields[0], []).append((fields[1], line))
    return users, header


def id_key(label):
    try:
        return (0, int(label), label)
    except ValueError:
        return (1, 0, label)


def split_user(rows, rng, test_prop):
    """Liang's split_train_test_proportion for one user: (input rows, rows to find)."""
    if len(rows) < 5:
        return rows, []
    n_test = int(test_prop * len(rows))
    chosen = set(rng.sample(range(len(rows)), n_test))
    return ([r for i, r in enumerate(rows) if i not in chosen],
            [r for i, r in enumerate(rows) if i in chosen])


def write_rows(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write(header + "\n")
        for _, line in rows:
            out.write(line + "\n")


def make_folds(users, folds, heldout, seed):
    """[(train users, validation users, test users)] per fold."""
    order = sorted(users, key=id_key)
    random.Random(seed).shuffle(order)
    if folds == 1:
        if 2 * heldout >= len(order):
            raise InputError(f"--heldout {heldout}: {len(order)} users cannot give {heldout} "
                             "test and validation users each and keep training users")
        return [(order[2 * heldout:], order[heldout:2 * heldout], order[:heldout])]
    parts = [order[f::folds] for f in range(folds)]
    result = []
    for f in range(folds):
        train = [u for g in range(folds) if g not in (f, (f + 1) % folds) for u in parts[g]]
        result.append((train, parts[(f + 1) % folds], parts[f]))
    return result


def split(ratings, out_dir, folds=5, heldout=10000, min_rating=4.0, min_user_items=5,
          test_prop=0.2, seed=98765):
    """Writes the folds; returns a list of per-fold summaries (dicts)."""
    users, header = read_positives(ratings, min_rating)
    users = {u: rows for u, rows in users.items() if len(rows) >= min_user_items}
    summaries = []
    for f, (train_users, val_users, test_users) in enumerate(
            make_folds(users, folds, heldout, seed)):
        fold_dir = os.path.join(out_dir, f"fold{f}")
        os.makedirs(fold_dir, exist_ok=True)
        train_rows = [r for u in train_users for r in users[u]]
        items = {movie for movie, _ in train_rows}
        write_rows(os.path.join(fold_dir, "train.csv"), header, train_rows)
        summary = {"fold": f, "train_users": len(train_users), "items": len(items),
                   "train_positives": len(train_rows)}
        # One generator per fold and part, seeded like Liang's (np.random.seed(98765) before the
        # split); the users are visited in id order so the result does not depend on the file.
        for part, part_users in (("val", val_users), ("test", test_users)):
            rng = random.Random(f"{seed}/{f}/{part}")
            tr, te = [], []
            scored = 0
            for u in sorted(part_users, key=id_key):
                rows = [r for r in users[u] if r[0] in items]
                a, b = split_user(rows, rng, test_prop)
                if b:
                    tr += a
                    te += b
                    scored += 1
            write_rows(os.path.join(fold_dir, f"{part}_tr.csv"), header, tr)
            write_rows(os.path.join(fold_dir, f"{part}_te.csv"), header, te)
            summary[f"{part}_users"] = scored
            summary[f"{part}_positives"] = len(tr) + len(te)
        summaries.append(summary)
    return summaries, len(users), sum(map(len, users.values()))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("ratings", help="MovieLens ratings CSV (userId,movieId,rating,timestamp)")
    parser.add_argument("-d", "--out-dir", default=".", help="output directory (default .)")
    parser.add_argument("--folds", type=int, default=5, help="folds (default 5; 1 = one split)")
    parser.add_argument("--heldout", type=int, default=10000,
                        help="with --folds 1: test users, and as many validation users "
                        "(default 10000, Liang's ML-20M setting)")
    parser.add_argument("--min-rating", type=float, default=4.0,
                        help="ratings >= this are positives (default 4)")
    parser.add_argument("--min-user-items", type=int, default=5,
                        help="users with fewer positives are dropped (default 5)")
    parser.add_argument("--seed", type=int, default=98765, help="random seed (default 98765)")
    args = parser.parse_args(argv)
    if args.folds < 1 or args.folds == 2:
        parser.error(f"--folds: found {args.folds}; expected 1 or >= 3 (each fold needs training, "
                     "validation and test users)")
    try:
        summaries, n_users, n_pos = split(args.ratings, args.out_dir, args.folds, args.heldout,
                                          args.min_rating, args.min_user_items, seed=args.seed)
    except (InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    print(f"{PROG}: {n_users} users with >= {args.min_user_items} ratings >= {args.min_rating:g} "
          f"({n_pos} positives)")
    for s in summaries:
        print(f"  fold {s['fold']}: {s['train_users']} training users x {s['items']} items "
              f"({s['train_positives']} positives); {s['val_users']} validation and "
              f"{s['test_users']} test users scored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
