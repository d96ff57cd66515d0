#!/usr/bin/env python3
"""Top-1 accuracy of nn-predict's output against the labels of an nn-encode dataset file.

Usage: image_accuracy.py PREDICTIONS CLASSES_IDX DATASET.nc [--labels NAME] [--per-class]
  PREDICTIONS  nn-predict output, one line per example: example<TAB>class,score:...
               (the first class on a line is the prediction; example = 0-based example number)
  CLASSES_IDX  the class index nn-encode wrote (name<TAB>label)
  DATASET.nc   the file nn-encode wrote for the same images; its one-hot label dataset
               (--labels, default "output") holds the true classes. Read with ncdump.
Prints "accuracy A (hits/images)" and, with --per-class, one line per class.
"""

import re
import subprocess
import sys


def ncdump(*args):
    try:
        return subprocess.run(["ncdump", *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"ncdump {' '.join(args)} failed: {e}")


def read_labels(path, name):
    header = ncdump("-h", path)
    found = re.search(r':name(\d+) = "' + re.escape(name) + '"', header)
    if not found:
        sys.exit(f"{path}: no dataset named {name!r}")
    n = found.group(1)
    if not re.search(rf":attributes{n} = 3U", header):
        sys.exit(f"{path}: dataset {name!r} is not a sparse one-hot (attributes 3) label set")
    text = ncdump("-v", f"sparseIndex{n}", path)
    body = text.split(f"sparseIndex{n} =")[-1]
    return [int(v) for v in re.findall(r"\d+", body)]


def main():
    argv = sys.argv[1:]
    name = "output"
    if "--labels" in argv:
        i = argv.index("--labels")
        name = argv[i + 1]
        del argv[i:i + 2]
    per_class = "--per-class" in argv
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 3:
        sys.exit(__doc__)
    predictions, classes_idx, dataset = args
    names = {}
    with open(classes_idx, encoding="utf-8") as f:
        for line in f:
            label, index = line.rstrip("\n").split("\t")
            names[label] = int(index)
    truth = read_labels(dataset, name)
    hits = total = 0
    counts = {}
    with open(predictions, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            example, rest = line.rstrip("\n").split("\t", 1)
            best = rest.split(":", 1)[0].rsplit(",", 1)[0]
            if best not in names:
                sys.exit(f"{predictions}:{number}: class {best!r} is not in {classes_idx}")
            label = truth[int(example)]
            ok = names[best] == label
            hits += ok
            total += 1
            h, n = counts.get(label, (0, 0))
            counts[label] = (h + ok, n + 1)
    if total == 0:
        sys.exit(f"{predictions}: no predictions")
    print(f"accuracy {hits / total:.4f} ({hits}/{total})")
    if per_class:
        by_index = {i: n for n, i in names.items()}
        for label in sorted(counts):
            h, n = counts[label]
            print(f"  {by_index.get(label, str(label)):12} {h / n:.4f} ({h}/{n})")


if __name__ == "__main__":
    main()
