"""The GPU check's comparisons: per-epoch losses of two training runs, two sets of top-10 lists,
two validation reports. Each returns (ok, text): the verdict and the table for the report."""

import json
import os


def epochs(path):
    """The per-epoch records of nn-train's <results>.epochs.jsonl ([] when there is none)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def compare_losses(a, b, tol1, toln, names=("A", "B")):
    """Losses a[i], b[i] (lists of floats, or of epoch records with "loss"): the first within
    tol1 relative, every later one within toln of the first's magnitude (training drifts apart
    chaotically once summation orders differ)."""
    la = [x["loss"] if isinstance(x, dict) else x for x in a]
    lb = [x["loss"] if isinstance(x, dict) else x for x in b]
    ok = len(la) == len(lb) > 0
    lines = [f"{'epoch':>5} {'loss ' + names[0]:>16} {'loss ' + names[1]:>16} {'rel diff':>10}"]
    scale = abs(la[0]) if la else 0.0
    for i, (x, y) in enumerate(zip(la, lb)):
        rel = abs(x - y) / max(1e-12, abs(x))
        good = rel < tol1 if i == 0 else abs(x - y) < toln * max(scale, 1e-12)
        ok = ok and good and x == x and y == y  # NaN never passes
        lines.append(f"{i + 1:>5} {x:>16.8f} {y:>16.8f} {rel:>10.2e}{'' if good else '  <-'}")
    if len(la) != len(lb):
        lines.append(f"epochs: {len(la)} against {len(lb)}")
    lines.append("MATCH" if ok else
                 f"MISMATCH (epoch 1 within {tol1:g} relative, then within {toln:g} of epoch 1's loss)")
    return ok, "\n".join(lines)


def compare_epoch_files(path_a, path_b, tol1, toln, names=("A", "B")):
    a, b = epochs(path_a), epochs(path_b)
    if not a or not b:
        return False, f"no epochs in {os.path.basename(path_a) if not a else os.path.basename(path_b)}"
    return compare_losses(a, b, tol1, toln, names)


def recommendations(path):
    """nn-predict's lists: user -> [item, ...] in rank order."""
    out = {}
    with open(path) as f:
        for line in f:
            if "\t" not in line:
                continue
            user, items = line.rstrip("\n").split("\t", 1)
            out[user] = [e.split(",")[0] for e in items.split(":") if e]
    return out


def compare_lists(path_a, path_b, min_identical=None, min_overlap=None):
    """Top-K lists of the same users: the share whose lists are identical (>= min_identical)
    and/or the mean share of items both lists hold (>= min_overlap)."""
    a, b = recommendations(path_a), recommendations(path_b)
    if not a or set(a) != set(b):
        return False, f"users differ: {len(a)} against {len(b)}"
    identical = sum(1 for u in a if a[u] == b[u]) / len(a)
    overlap = sum(len(set(a[u]) & set(b[u])) / max(1, len(a[u])) for u in a) / len(a)
    ok = (min_identical is None or identical >= min_identical) and \
         (min_overlap is None or overlap >= min_overlap)
    text = (f"{len(a)} users; identical lists for {identical:.1%}; mean overlap {overlap:.4f}"
            + (f" (identical wanted >= {min_identical:.0%})" if min_identical is not None else "")
            + (f" (overlap wanted >= {min_overlap:g})" if min_overlap is not None else ""))
    return ok, text


def validation_metrics(path):
    """The validation results nn-train wrote per epoch (records with "validation")."""
    return [r["validation"] for r in epochs(path) if r.get("validation")]


def compare_validation(path_a, path_b, tol):
    """Every validation metric of every epoch within tol (absolute; the metrics are shares)."""
    a, b = validation_metrics(path_a), validation_metrics(path_b)
    if not a or len(a) != len(b):
        return False, f"validation results: {len(a)} against {len(b)} epochs"
    ok, lines = True, []
    for i, (x, y) in enumerate(zip(a, b)):
        for key in sorted(k for k in x if isinstance(x[k], (int, float))):
            if key not in y:
                ok = False
                lines.append(f"epoch {i + 1} {key}: missing in B")
                continue
            d = abs(x[key] - y[key])
            good = d <= tol
            ok = ok and good
            lines.append(f"epoch {i + 1} {key:<16} {x[key]:.6f} {y[key]:.6f}{'' if good else '  <-'}")
    lines.append("MATCH" if ok else f"MISMATCH (each metric within {tol:g})")
    return ok, "\n".join(lines)
