#!/usr/bin/python3
"""Top-K evaluation of MovieLens recommendations against a per-user holdout, with a popularity
baseline computed in the same run.

Inputs: train.csv and test.csv from samples/movielens/split_ratings.py (userId,movieId,rating,
timestamp) and any number of recommendation files in nn-predict's format, one line per user:
`user<TAB>movie,score:movie,score:...:` (best first; the trailing colon and the scores are
optional).

The module is also imported by movielens_peer.py so that every method is scored by the same code:
read_ratings(), read_recs(), popularity_recs(), evaluate(), format_table(), DEFINITIONS.
"""

import argparse
import json
import math
import os
import sys

PROG = "movielens_eval.py"

DEFINITIONS = """\
Metrics (K = {k}; users = users with >= 1 relevant test item; a user without recommendations
scores 0; only the first K recommendations of a line count):
  recall@K    = mean over users of |topK ∩ test| / min(K, |test|)
  precision@K = mean over users of |topK ∩ test| / K
  ndcg@K      = mean over users of DCG/IDCG, DCG = sum over hits at rank r of 1/log2(r+1),
                IDCG = sum over i = 1..min(K, |test|) of 1/log2(i+1)
  seen        = recommendations in the top K that are in the user's TRAIN items (must be 0);
                when non-zero, a second row '... -seen' scores the list with them removed
  popularity  = the K movies with the most train ratings (ties: smaller movie id) that the user
                has not rated in train"""


class InputError(Exception):
    """A malformed input line; the message names the file and line."""


def label_key(label):
    """Sort key for movie/user labels: numeric when the label is an integer."""
    try:
        return (0, int(label), label)
    except ValueError:
        return (1, 0, label)


def read_ratings(path, min_rating=None):
    """Reads a ratings CSV into {user: {movie: rating}}; a header line is optional.

    With min_rating set, only ratings >= min_rating are kept (users left empty are dropped).
    """
    users = {}
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            fields = [f.strip() for f in line.split(",")]
            if len(fields) != 4:
                raise InputError(f"{path}:{line_no}: found {len(fields)} comma-separated fields in "
                                 f"{line!r}; expected 4 (userId,movieId,rating,timestamp)")
            try:
                rating = float(fields[2])
            except ValueError:
                if line_no == 1:
                    continue  # header
                raise InputError(
                    f"{path}:{line_no}: rating {fields[2]!r} is not a number") from None
            if min_rating is not None and rating < min_rating:
                continue
            users.setdefault(fields[0], {})[fields[1]] = rating
    return users


def read_recs(path):
    """Reads a recommendations file into ({user: [movie, ...] best first}, problems).

    problems counts lines whose scores are not in descending order and repeated movies (only the
    first occurrence is kept). A line without a TAB or with a bad score is an error.
    """
    recs = {}
    problems = {"unsorted_lines": 0, "repeated_movies": 0, "repeated_users": 0}
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise InputError(f"{path}:{line_no}: no TAB in {line[:60]!r}; expected "
                                 "'user<TAB>movie,score:movie,score:...'")
            user, body = line.split("\t", 1)
            movies, seen, last, unsorted = [], set(), math.inf, False
            for token in body.split(":"):
                token = token.strip()
                if not token:
                    continue
                movie, _, score_text = token.partition(",")
                if score_text:
                    try:
                        score = float(score_text)
                    except ValueError:
                        raise InputError(f"{path}:{line_no}: score {score_text!r} of movie "
                                         f"{movie!r} is not a number") from None
                    unsorted = unsorted or score > last
                    last = score
                if movie in seen:
                    problems["repeated_movies"] += 1
                    continue
                seen.add(movie)
                movies.append(movie)
            problems["unsorted_lines"] += unsorted
            if user.strip() in recs:
                problems["repeated_users"] += 1
            recs[user.strip()] = movies
    return recs, problems


def popularity_recs(train, k, users=None):
    """The k most-rated train movies per user, excluding the user's own train movies."""
    counts = {}
    for items in train.values():
        for movie in items:
            counts[movie] = counts.get(movie, 0) + 1
    ranked = sorted(counts, key=lambda m: (-counts[m], label_key(m)))
    result = {}
    for user in (users if users is not None else train):
        own = train.get(user, {})
        picks = []
        for movie in ranked:
            if movie not in own:
                picks.append(movie)
                if len(picks) == k:
                    break
        result[user] = picks
    return result


def evaluate(recs, train, test, k=10):
    """Scores {user: [movie, ...]} against test; returns a dict of metrics and checks."""
    discounts = [1.0 / math.log2(r + 2) for r in range(k)]
    recall = precision = ndcg = 0.0
    n_users = missing = short = seen = seen_users = 0
    for user, relevant in test.items():
        if not relevant:
            continue
        n_users += 1
        if user not in recs:
            missing += 1
            continue
        top = recs[user][:k]
        if len(top) < k:
            short += 1
        own = train.get(user, {})
        n_seen = sum(1 for m in top if m in own)
        seen += n_seen
        seen_users += n_seen > 0
        hits = [r for r, m in enumerate(top) if m in relevant]
        ideal = min(k, len(relevant))
        recall += len(hits) / ideal
        precision += len(hits) / k
        ndcg += sum(discounts[r] for r in hits) / sum(discounts[:ideal])
    scale = 1.0 / n_users if n_users else math.nan
    return {
        "k": k,
        "users": n_users,
        f"recall@{k}": recall * scale,
        f"precision@{k}": precision * scale,
        f"ndcg@{k}": ndcg * scale,
        "seen": seen,
        "seen_users": seen_users,
        "missing_users": missing,
        "short_lists": short,
    }


def drop_seen(recs, train):
    """The same lists with the user's train movies removed."""
    return {u: [m for m in ms if m not in train.get(u, {})] for u, ms in recs.items()}


def format_table(rows, k=10):
    """rows: [(name, metrics)] -> aligned text table."""
    name_width = max([len("method")] + [len(name) for name, _ in rows])
    head = (f"{'method':<{name_width}}  {'users':>6}  {'recall@' + str(k):>10}  "
            f"{'precision@' + str(k):>12}  {'ndcg@' + str(k):>8}  {'seen':>6}  {'missing':>7}  "
            f"{'short':>6}")
    lines = [head, "-" * len(head)]
    for name, m in rows:
        lines.append(f"{name:<{name_width}}  {m['users']:>6}  {m[f'recall@{k}']:>10.4f}  "
                     f"{m[f'precision@{k}']:>12.4f}  {m[f'ndcg@{k}']:>8.4f}  {m['seen']:>6}  "
                     f"{m['missing_users']:>7}  {m['short_lists']:>6}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Evaluate top-K MovieLens recommendations (nn-predict format) on a per-user "
        "holdout, next to a popularity baseline computed on train.",
        epilog=DEFINITIONS.format(k="--k, default 10"))
    parser.add_argument("train", help="train.csv (userId,movieId,rating,timestamp)")
    parser.add_argument("test", help="test.csv (same format)")
    parser.add_argument("recs", nargs="*",
                        help="recommendation files 'user<TAB>movie,score:...:'; NAME=PATH sets the "
                        "row name (default: the file name)")
    parser.add_argument("-k", "--k", type=int, default=10, help="list length K (default 10)")
    parser.add_argument("--relevant-min-rating", type=float, default=None,
                        help="count only test ratings >= this value as relevant (default: all "
                        "test ratings)")
    parser.add_argument("--json", metavar="FILE",
                        help="also write one JSON object per row to FILE")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k: found {args.k}; expected >= 1")

    try:
        train = read_ratings(args.train)
        test = read_ratings(args.test, args.relevant_min_rating)
        rows = [("popularity", evaluate(popularity_recs(train, args.k, test), train, test, args.k))]
        notes = []
        for spec in args.recs:
            name, path = spec.split("=", 1) if "=" in spec and not os.path.exists(spec) else (
                os.path.basename(spec), spec)
            recs, problems = read_recs(path)
            metrics = evaluate(recs, train, test, args.k)
            metrics.update(problems)
            rows.append((name, metrics))
            if metrics["seen"]:
                rows.append((name + " -seen",
                             evaluate(drop_seen(recs, train), train, test, args.k)))
            notes.append(f"{name}: {len(recs)} users in file; {metrics['seen']} top-{args.k} "
                         f"recommendations are train items ({metrics['seen_users']} users); "
                         f"{problems['unsorted_lines']} lines not sorted by score; "
                         f"{problems['repeated_movies']} repeated movies; "
                         f"{problems['repeated_users']} repeated users")
    except (InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1

    print(DEFINITIONS.format(k=args.k))
    print(f"train: {args.train} ({sum(map(len, train.values()))} ratings, {len(train)} users); "
          f"test: {args.test} ({sum(map(len, test.values()))} relevant ratings, {len(test)} users)")
    print()
    print(format_table(rows, args.k))
    for note in notes:
        print(note)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            for name, metrics in rows:
                out.write(json.dumps({"method": name, **metrics}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
