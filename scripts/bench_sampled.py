#!/usr/bin/env python3
"""Data and scoring for scripts/bench_sampled.sh (sampled output training, docs/wide-outputs.md).

gen: a synthetic catalog with planted structure. ITEMS items fall into CLUSTERS contiguous
clusters; within a cluster item popularity is Zipf (exponent ZIPF, ranks shuffled). A user
belongs to one cluster (clusters drawn uniformly) and holds PER_USER distinct items of it drawn
by popularity. Training users see all their items as input and as target; each test user shows
half of their items (input) and hides the other half (held out); as many validation users,
drawn after the test users, are split the same way (to choose each network's epoch). The input
is the user's items hashed into BUCKETS (16,384 in the benchmark) features, so that the input
layer stays small and the output layer is what the benchmark measures. Writes train_in.txt,
train_out.txt, test_in.txt, test_filter.txt, test_heldout.txt and the same three val_*.txt
(sample<TAB>feature:feature:...).

recall: recall@K of a recs file (nn-predict's sample<TAB>item,score:...) against
test_heldout.txt: the mean over test users of |top K & held out| / min(K, |held out|).
"""
import bisect
import random
import sys


def gen(out, items, clusters, per_user, train_users, test_users, buckets, zipf, seed):
    rng = random.Random(seed)
    size = items // clusters
    # Cumulative Zipf weights over ranks 1..size, shared by every cluster (each cluster shuffles
    # which of its items holds which rank).
    cum, total = [], 0.0
    for r in range(1, size + 1):
        total += 1.0 / r ** zipf
        cum.append(total)
    perms = {}

    def item_of(c, rank):
        if c not in perms:
            p = list(range(size))
            random.Random(seed * 7919 + c).shuffle(p)
            perms[c] = p
        return c * size + perms[c][rank]

    def user_items():
        c = rng.randrange(clusters)
        chosen = set()
        while len(chosen) < per_user:
            rank = bisect.bisect_left(cum, rng.random() * total)
            chosen.add(item_of(c, min(rank, size - 1)))
        return sorted(chosen)

    def bucket(i):
        return (i * 2654435761) % (1 << 32) % buckets

    def line(name, feats):
        return name + "\t" + ":".join(feats) + "\n"

    with open(f"{out}/train_in.txt", "w") as fi, open(f"{out}/train_out.txt", "w") as fo:
        # Every item and bucket appears once in the first rows, so the feature indices hold the
        # whole catalog (the layers are ITEMS and BUCKETS wide) whatever the users drew.
        for u in range(train_users):
            its = user_items()
            fi.write(line(f"u{u}", sorted({f"b{bucket(i)}" for i in its})))
            fo.write(line(f"u{u}", [f"i{i}" for i in its]))
    with open(f"{out}/all_items.txt", "w") as f:
        f.write(line("catalog", [f"i{i}" for i in range(items)]))
    with open(f"{out}/all_buckets.txt", "w") as f:
        f.write(line("catalog", [f"b{b}" for b in range(buckets)]))
    # Test users first, then as many validation users (drawn after them, so the test users of a
    # seed are the same with or without validation users).
    for kind, prefix in (("test", "t"), ("val", "v")):
        with open(f"{out}/{kind}_in.txt", "w") as fi, open(f"{out}/{kind}_filter.txt", "w") as ff, open(
            f"{out}/{kind}_heldout.txt", "w"
        ) as fh:
            for u in range(test_users):
                its = user_items()
                rng.shuffle(its)
                shown, hidden = its[: per_user // 2], its[per_user // 2 :]
                fi.write(line(f"{prefix}{u}", sorted({f"b{bucket(i)}" for i in shown})))
                ff.write(line(f"{prefix}{u}", [f"i{i}" for i in shown]))
                fh.write(line(f"{prefix}{u}", [f"i{i}" for i in hidden]))


def read_lists(path, with_scores=False):
    out = {}
    for ln in open(path):
        name, _, rest = ln.rstrip("\n").partition("\t")
        fs = [f for f in rest.split(":") if f]
        out[name] = [f.split(",")[0] for f in fs] if with_scores else fs
    return out


def recall(recs_path, heldout_path, k):
    recs, held = read_lists(recs_path, True), read_lists(heldout_path)
    total = 0.0
    for user, h in held.items():
        top = recs.get(user, [])[:k]
        total += len(set(top) & set(h)) / min(k, len(h))
    return total / max(len(held), 1)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        a = sys.argv[2:]
        gen(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]), int(a[6]), float(a[7]),
            int(a[8]))
    elif sys.argv[1] == "recall":
        print(f"{recall(sys.argv[2], sys.argv[3], int(sys.argv[4])):.4f}")
    else:
        sys.exit("usage: bench_sampled.py gen|recall ...")
