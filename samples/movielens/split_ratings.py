#!/usr/bin/python3
"""Per-user random holdout split of a MovieLens ratings CSV into train.csv and test.csv.

For every user with at least --min-ratings ratings (default 5), round(--test-fraction * n) of their
ratings (default 20%, at least one, never all) go to test.csv and the rest to train.csv. Users with
fewer ratings keep all of them in train.csv: a holdout of zero or one item from such a short history
would say little about the model and would leave almost nothing to build a profile from.

The split is deterministic and does not depend on the order of rows in the file: each user's movies
are sorted by id and shuffled by a generator seeded with "<seed>/<userId>". Rows are copied verbatim
(without a trailing CR), in input order; a header line, if the input has one, is written to both
files. The file is read twice (count, then write) so memory stays at a few bytes per rating.
"""

import argparse
import math
import os
import random
import sys
from array import array

PROG = "split_ratings.py"


class InputError(Exception):
    """A malformed input line; the message names the file and line."""


def is_header(line):
    """A first line whose first field is not an integer is taken as a header."""
    try:
        int(line.split(",", 1)[0])
        return False
    except ValueError:
        return True


def user_movie(path, line_no, line):
    """Returns (userId, movieId) as ints from one CSV row or raises InputError."""
    fields = line.split(",")
    if len(fields) != 4:
        raise InputError(f"{path}:{line_no}: found {len(fields)} comma-separated fields in "
                         f"{line.strip()!r}; expected 4 (userId,movieId,rating,timestamp)")
    try:
        return int(fields[0]), int(fields[1])
    except ValueError:
        raise InputError(f"{path}:{line_no}: cannot parse {line.strip()!r}; expected integer "
                         "userId and movieId") from None


def data_lines(path, handle):
    """Yields (line_no, line without newline) for data rows; header and blank lines are skipped."""
    for line_no, line in enumerate(handle, 1):
        line = line.rstrip("\r\n")
        if line_no == 1 and is_header(line):
            continue
        if line.strip():
            yield line_no, line


def test_count(n, fraction, min_ratings):
    """How many of a user's n ratings are held out."""
    if n < min_ratings or n < 2:
        return 0
    return min(n - 1, max(1, math.floor(fraction * n + 0.5)))


def choose_test(path, fraction, min_ratings, seed):
    """First pass: returns (set of (user, movie) held out, per-user rating counts)."""
    movies = {}  # user -> array of movie ids (4 bytes each)
    with open(path, "r", encoding="utf-8") as handle:
        for line_no, line in data_lines(path, handle):
            user, movie = user_movie(path, line_no, line)
            bucket = movies.get(user)
            if bucket is None:
                bucket = movies[user] = array("i")
            bucket.append(movie)
    held_out = set()
    counts = {}
    for user, bucket in movies.items():
        counts[user] = len(bucket)
        distinct = sorted(set(bucket))
        k = test_count(len(distinct), fraction, min_ratings)
        if k:
            rng = random.Random(f"{seed}/{user}")
            held_out.update((user, m) for m in rng.sample(distinct, k))
    return held_out, counts


def write_split(path, held_out, train_path, test_path):
    """Second pass: copies each row to train or test; returns (train rows, test rows)."""
    n_train = n_test = 0
    with open(path, "r", encoding="utf-8") as handle, \
            open(train_path, "w", encoding="utf-8", newline="\n") as train, \
            open(test_path, "w", encoding="utf-8", newline="\n") as test:
        first = handle.readline()
        handle.seek(0)
        if first and is_header(first.rstrip("\r\n")):
            train.write(first.rstrip("\r\n") + "\n")
            test.write(first.rstrip("\r\n") + "\n")
        for line_no, line in data_lines(path, handle):
            if user_movie(path, line_no, line) in held_out:
                test.write(line + "\n")
                n_test += 1
            else:
                train.write(line + "\n")
                n_train += 1
    return n_train, n_test


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Deterministic per-user random holdout: writes train.csv and test.csv in the "
        "input's CSV format (userId,movieId,rating,timestamp).")
    parser.add_argument("ratings", help="ratings CSV file (header line optional)")
    parser.add_argument("-d", "--out-dir", default=".",
                        help="directory for train.csv and test.csv (default: .)")
    parser.add_argument("--train", help="train file path (overrides --out-dir)")
    parser.add_argument("--test", help="test file path (overrides --out-dir)")
    parser.add_argument("--test-fraction", type=float, default=0.2,
                        help="share of each user's ratings held out (default 0.2)")
    parser.add_argument("--min-ratings", type=int, default=5,
                        help="users with fewer ratings keep all of them in train (default 5)")
    parser.add_argument("--seed", type=int, default=12134, help="random seed (default 12134)")
    args = parser.parse_args(argv)
    if not 0.0 < args.test_fraction < 1.0:
        parser.error(f"--test-fraction: found {args.test_fraction:g}; expected 0 < x < 1")

    train_path = args.train or os.path.join(args.out_dir, "train.csv")
    test_path = args.test or os.path.join(args.out_dir, "test.csv")
    try:
        if not (args.train and args.test):
            os.makedirs(args.out_dir, exist_ok=True)
        held_out, counts = choose_test(args.ratings, args.test_fraction, args.min_ratings,
                                       args.seed)
        n_train, n_test = write_split(args.ratings, held_out, train_path, test_path)
    except (InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1

    short = sum(1 for n in counts.values() if test_count(n, 1.0, args.min_ratings) == 0)
    print(f"{PROG}: {len(counts)} users, {n_train + n_test} ratings; "
          f"{len(counts) - short} users split, {short} users with < {args.min_ratings} ratings "
          f"kept whole in train; train {n_train} rows -> {train_path}, "
          f"test {n_test} rows -> {test_path} (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
