#!/usr/bin/python3
"""Convert a MovieLens ratings CSV into the text-example format read by nn-generate.

Input rows are `userId,movieId,rating,timestamp` (a header line is optional; CRLF is fine).
Output is one line per user, users in ascending numeric order:

    analog:     user<TAB>movie,rating:movie,rating:...
    indicator:  user<TAB>movie:movie:...

Within a line, movies are in timestamp order (ties broken by movie id) with --order time (the
default), or in ascending movie id order with --order id. The order only matters because nn-generate
numbers features in order of first appearance. A user whose ratings are all filtered out by
--min-rating gets no line. If a (user, movie) pair occurs more than once, the rating with the latest
timestamp wins (the last one in the file on a tie) before --min-rating is applied; sparse examples
should not repeat a feature.

The input is streamed. MovieLens releases list each user's ratings in one contiguous block, so only
one user's rows are held at a time plus the finished output lines (a 12M-row ML-20M-shaped file
took 18-34 s depending on machine load, 140 MB peak). If a user's rows turn out not to be
contiguous, the file is read a second time holding every row in memory, which works for any order
but needs more memory.
Only the examples file is written; a one-line summary goes to stderr.
"""

import argparse
import os
import sys

PROG = "convert_ratings.py"


class InputError(Exception):
    """A malformed input line; the message names the file and line."""


class NotGrouped(Exception):
    """Raised by the fast path when a user's rows are not contiguous."""


def parse_row(path, line_no, line):
    """Splits one CSV row into (user, movie_id, rating_text, rating, timestamp) or raises."""
    fields = line.rstrip("\r\n").split(",")
    if len(fields) != 4:
        raise InputError(
            f"{path}:{line_no}: found {len(fields)} comma-separated fields in {line.strip()!r}; "
            "expected 4 (userId,movieId,rating,timestamp)")
    user, movie, rating_text, ts = (f.strip() for f in fields)
    try:
        user_num = int(user)
        movie_num = int(movie)
        rating = float(rating_text)
        stamp = int(ts)
    except ValueError:
        raise InputError(
            f"{path}:{line_no}: cannot parse {line.strip()!r}; expected integer userId, integer "
            "movieId, numeric rating and integer timestamp") from None
    return user_num, user, movie_num, movie, rating_text, rating, stamp


def is_header(line):
    """A first line whose first field is not an integer is taken as a header."""
    first = line.split(",", 1)[0].strip()
    try:
        int(first)
        return False
    except ValueError:
        return True


def format_user(user, items, args, stats):
    """items: {movie_num: (stamp, seq, movie_text, rating_text, rating)} -> one output line (no
    newline), or None when --min-rating leaves nothing. Filtering happens here, after repeated
    pairs were merged, so a movie whose latest rating is too low is dropped."""
    kept = [m for m, item in items.items() if item[4] >= args.min_rating]
    stats["dropped"] += len(items) - len(kept)
    if not kept:
        return None
    if args.order == "time":
        kept.sort(key=lambda m: (items[m][0], m))
    else:
        kept.sort()
    if args.mode == "analog":
        body = ":".join(f"{items[m][2]},{items[m][3]}" for m in kept)
    else:
        body = ":".join(items[m][2] for m in kept)
    return f"{user}\t{body}"


def add_rating(items, row, seq):
    """Keeps the latest rating of a movie; returns True when the movie was already there."""
    _, _, movie_num, movie, rating_text, rating, stamp = row
    old = items.get(movie_num)
    if old is None or (stamp, seq) >= (old[0], old[1]):
        items[movie_num] = (stamp, seq, movie, rating_text, rating)
    return old is not None


def rows(path, handle):
    """Yields (line_no, parsed row) for every data line, skipping a header and blank lines."""
    for line_no, line in enumerate(handle, 1):
        if line_no == 1 and is_header(line):
            continue
        if not line.strip():
            continue
        yield line_no, parse_row(path, line_no, line)


def convert_grouped(path, args, stats):
    """Fast path: one user's block at a time; raises NotGrouped if a user reappears."""
    lines = {}  # user number -> finished output line (None: nothing kept)
    current = current_text = None
    items = {}
    with open(path, "r", encoding="utf-8") as handle:
        for seq, (line_no, row) in enumerate(rows(path, handle)):
            user_num = row[0]
            stats["rows"] += 1
            if user_num != current:
                if current is not None:
                    lines[current] = format_user(current_text, items, args, stats)
                if user_num in stats["seen_users"]:
                    raise NotGrouped(f"{path}:{line_no}: user {row[1]} appears again")
                stats["seen_users"].add(user_num)
                current, current_text, items = user_num, row[1], {}
            if add_rating(items, row, seq):
                stats["duplicates"] += 1
    if current is not None:
        lines[current] = format_user(current_text, items, args, stats)
    return lines


def convert_any_order(path, args, stats):
    """General path: holds every row in memory."""
    users = {}  # user number -> (user text, items)
    with open(path, "r", encoding="utf-8") as handle:
        for seq, (line_no, row) in enumerate(rows(path, handle)):
            stats["rows"] += 1
            stats["seen_users"].add(row[0])
            entry = users.setdefault(row[0], (row[1], {}))
            if add_rating(entry[1], row, seq):
                stats["duplicates"] += 1
    return {u: format_user(text, items, args, stats) for u, (text, items) in users.items()}


def fresh_stats():
    return {"rows": 0, "dropped": 0, "duplicates": 0, "seen_users": set()}


def convert(path, args):
    """Returns ({user number: line or None}, stats), streaming when the input allows."""
    stats = fresh_stats()
    try:
        return convert_grouped(path, args, stats), stats
    except NotGrouped:
        stats = fresh_stats()
        return convert_any_order(path, args, stats), stats


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MovieLens ratings CSV (userId,movieId,rating,timestamp) -> nn-generate text "
        "examples, one line per user in ascending user id order.")
    parser.add_argument("ratings", help="ratings CSV file (header line optional)")
    parser.add_argument("-o", "--output", default="-",
                        help="output examples file (default: stdout)")
    parser.add_argument("--mode", choices=("indicator", "analog"), default="analog",
                        help="indicator: 'user<TAB>movie:movie'; analog: "
                        "'user<TAB>movie,rating:movie,rating' (default: analog)")
    parser.add_argument("--min-rating", type=float, default=0.0,
                        help="keep only ratings >= this value (default 0 = keep all)")
    parser.add_argument("--order", choices=("time", "id"), default="time",
                        help="movie order within a line: by timestamp (ties by movie id) or by "
                        "movie id (default: time)")
    args = parser.parse_args(argv)

    try:
        lines, stats = convert(args.ratings, args)
    except (InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1

    out = sys.stdout if args.output == "-" else None
    try:
        if out is None:
            out = open(args.output, "w", encoding="utf-8", newline="\n")
        for user_num in sorted(lines):
            if lines[user_num] is not None:
                out.write(lines[user_num])
                out.write("\n")
    except BrokenPipeError:
        # A reader such as `head` stopped early; that is not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:
        print(f"{PROG}: error: {args.output}: {err}", file=sys.stderr)
        return 1
    finally:
        if out is not None and out is not sys.stdout:
            out.close()

    print(f"{PROG}: {stats['rows']} ratings from {len(stats['seen_users'])} users; "
          f"{stats['dropped']} (user, movie) pairs below --min-rating {args.min_rating:g}; "
          f"{stats['duplicates']} repeated (user, movie) pairs merged; "
          f"{sum(line is not None for line in lines.values())} examples written "
          f"({args.mode}, movies in {args.order} order)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
