#!/usr/bin/python3
"""Recommendation quality on held-out users (the protocol of Liang et al. 2018: see
heldout_users_split.py): one table of recall@10, recall@20, recall@50 and NDCG@100 for
popularity, EASE, the PyTorch Mult-DAE and Mult-VAE of the paper (multvae_peer.py), RecVAE
(recvae_peer.py), VASP (vasp_peer.py), NumPy linear models (higher_order_peer.py,
linear_variants_peer.py) and this suite's networks (configs/*: nn-generate, nn-train,
nn-predict), every row scored by the same code (movielens_eval.evaluate) on the same test
users, averaged over the folds.

Per fold and method: fit on the training users; choose what is tuned (EASE's lambda, the epoch
of a network) on the validation users (the input 80% of each user's items in, the other 20% to
find); then score the test users once: their input items in, the top 100 items not among them out.

Metrics (Liang et al.; movielens_eval.DEFINITIONS): recall@K = |top K ∩ held out| / min(K, |held
out|), NDCG@K = DCG / IDCG with IDCG over min(K, |held out|) items, averaged over the users with
held-out items. Usage: scripts/bench_quality.sh (the one command), or this file with --help.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see movielens_peer.py

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.sparse as sp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout_users_split as split  # noqa: E402
import movielens_eval as ev  # noqa: E402

PROG = "bench_quality.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUTOFFS = (("recall@10", 10), ("recall@20", 20), ("recall@50", 50), ("ndcg@100", 100))
TOP = 100  # list length every method writes


class Fold:
    """One fold's CSV files as matrices over the training users' items."""

    def __init__(self, directory):
        self.dir = directory
        self.train = ev.read_ratings(os.path.join(directory, "train.csv"))
        self.items = sorted({m for items in self.train.values() for m in items}, key=ev.label_key)
        self.column = {m: j for j, m in enumerate(self.items)}
        self.x_train = self.matrix(sorted(self.train, key=ev.label_key), self.train)
        for part in ("val", "test"):
            tr = ev.read_ratings(os.path.join(directory, f"{part}_tr.csv"))
            te = ev.read_ratings(os.path.join(directory, f"{part}_te.csv"))
            users = sorted(tr, key=ev.label_key)
            setattr(self, f"{part}_users", users)
            setattr(self, f"{part}_tr", tr)
            setattr(self, f"{part}_te", te)
            setattr(self, f"x_{part}", self.matrix(users, tr))

    def matrix(self, users, ratings):
        rows, cols = [], []
        for r, u in enumerate(users):
            for m in ratings.get(u, {}):
                if m in self.column:
                    rows.append(r)
                    cols.append(self.column[m])
        return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                             shape=(len(users), len(self.items)))

    def recs(self, part, scores):
        """Top TOP items per held-out user of `part`, their input items excluded."""
        x = getattr(self, f"x_{part}")
        scores = np.array(scores, dtype=np.float32, copy=True)
        scores[x.nonzero()] = -np.inf
        k = min(TOP, scores.shape[1])
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
        top = np.take_along_axis(top, order, axis=1)
        users = getattr(self, f"{part}_users")
        return {u: [self.items[j] for j in top[r]] for r, u in enumerate(users)}

    def metrics(self, part, recs):
        fold_in, truth = getattr(self, f"{part}_tr"), getattr(self, f"{part}_te")
        out = {}
        for name, k in CUTOFFS:
            m = ev.evaluate(recs, fold_in, truth, k)
            out[name] = m[name]
            out["users"] = m["users"]
            out["seen"] = max(out.get("seen", 0), m["seen"])
        return out


# ---- popularity and EASE (NumPy) ----------------------------------------------------------------

def popularity(fold, log, settings):
    counts = np.asarray(fold.x_train.sum(axis=0)).ravel()
    # Ties to the smaller item id, as movielens_eval.popularity_recs.
    scores = counts - np.arange(len(counts)) * 1e-9
    return fold.recs("test", np.tile(scores, (fold.x_test.shape[0], 1))), {}


def ease_weights(x, lam):
    """EASE (Steck 2019): B = I - P diag(1/diag(P)), P = (X^T X + lambda I)^-1, diag(B) = 0."""
    # Float32 Cholesky (LAPACK spotrf/spotri): 6 times faster than a float64 inverse here, and
    # as accurate for ranking (the Gram matrix is well conditioned once lambda is added).
    gram = (x.T @ x).toarray().astype(np.float32)
    gram[np.diag_indices_from(gram)] += lam
    c, info = scipy.linalg.lapack.spotrf(gram, lower=1, overwrite_a=1)
    if info == 0:
        c, info = scipy.linalg.lapack.spotri(c, lower=1, overwrite_c=1)
    if info != 0:
        raise ArithmeticError(f"EASE: Cholesky of X^T X + {lam:g} I failed (LAPACK info {info})")
    p = np.tril(c) + np.tril(c, -1).T  # spotri fills the lower triangle only
    b = -p / np.diag(p)
    b[np.diag_indices_from(b)] = 0.0
    return b.astype(np.float32)


def ease(fold, log, settings):
    best = None
    for lam in settings["ease_lambdas"]:
        b = ease_weights(fold.x_train, lam)
        score = fold.metrics("val", fold.recs("val", fold.x_val @ b))[settings["select"]]
        log(f"    ease lambda {lam:g}: validation {settings['select']} {score:.4f}")
        if best is None or score > best[0]:
            best = (score, lam, b)
    return fold.recs("test", fold.x_test @ best[2]), {"lambda": best[1]}


# ---- PyTorch Mult-DAE / Mult-VAE ----------------------------------------------------------------

def torch_mult(kind):
    def run(fold, log, settings):
        import multvae_peer  # torch is imported only when a torch row runs
        import torch
        torch.set_num_threads(settings["threads"])
        cfg = dict(multvae_peer.PAPER, epochs=settings["torch_epochs"],
                   eval_every=settings["eval_every"])
        if settings["anneal_steps"]:
            cfg["anneal_steps"] = settings["anneal_steps"]
        else:  # the paper reaches the cap after ~86% of its updates (40,000 of 200 x 233):
            # beta = min(cap, updates / anneal_steps) = cap after 0.86 x the run's updates
            per_epoch = math.ceil(fold.x_train.shape[0] / cfg["batch"])
            cfg["anneal_steps"] = max(1, int(0.86 * cfg["epochs"] * per_epoch /
                                             cfg["anneal_cap"]))

        def validate(score_fn):
            return fold.metrics("val", fold.recs("val", score_fn(fold.x_val)))[settings["select"]]

        score_fn, _, epoch = multvae_peer.train(kind, fold.x_train, cfg, validate,
                                                log=log if settings["verbose"] else None)
        return fold.recs("test", score_fn(fold.x_test)), {"epoch": epoch}
    return run


def torch_recvae(fold, log, settings):
    import recvae_peer  # torch is imported only when a torch row runs
    import torch
    torch.set_num_threads(settings["threads"])

    def validate(score_fn):
        return fold.metrics("val", fold.recs("val", score_fn(fold.x_val)))[settings["select"]]

    best = None
    for gamma in settings["recvae_gammas"]:  # the KL weight per item of the user, by validation
        cfg = dict(recvae_peer.PAPER, epochs=settings["torch_epochs"],
                   eval_every=settings["eval_every"], gamma=gamma)
        score_fn, history, epoch = recvae_peer.train(fold.x_train, cfg, validate,
                                                     log=log if settings["verbose"] else None)
        score = max(m for _, m in history)
        log(f"    recvae gamma {gamma:g}: validation {settings['select']} {score:.4f} "
            f"at epoch {epoch}")
        if best is None or score > best[0]:
            best = (score, gamma, epoch, fold.recs("test", score_fn(fold.x_test)))
    return best[3], {"gamma": best[1], "epoch": best[2]}


def torch_vasp(fold, log, settings):
    import vasp_peer  # torch is imported only when a torch row runs
    import torch
    torch.set_num_threads(settings["threads"])

    def validate(score_fn):
        return fold.metrics("val", fold.recs("val", score_fn(fold.x_val)))[settings["select"]]

    best = None
    for lr in settings["vasp_lrs"]:  # the learning rate, by validation
        cfg = dict(vasp_peer.SETTINGS, epochs=settings["torch_epochs"],
                   eval_every=settings["eval_every"], lr=lr)
        score_fn, history, epoch = vasp_peer.train(fold.x_train, cfg, validate,
                                                   log=log if settings["verbose"] else None)
        score = max(m for _, m in history)
        log(f"    vasp lr {lr:g}: validation {settings['select']} {score:.4f} at epoch {epoch}")
        if best is None or score > best[0]:
            best = (score, lr, epoch, fold.recs("test", score_fn(fold.x_test)))
    return best[3], {"lr": best[1], "epoch": best[2]}


# ---- this suite's networks (configs/<name>: network.json + train.cdl) -------------------------------

def tools_dir():
    return os.environ.get("NN_TOOLS", os.path.join(ROOT, "build", "src", "tools"))


def run_tool(args, log_path):
    """Runs one of the suite's tools, its messages appended to log_path; raises on failure."""
    with open(log_path, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(args) + "\n")
        out.flush()
        done = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{os.path.basename(args[0])} failed (exit {done.returncode}); "
                           f"see {log_path}")


def nn_datasets(fold):
    """The fold as the suite's datasets (made once per fold, in <fold>/nn-data): input.nc and
    output.nc from the training users (one feature index for everything), and for the validation
    and test users their input items (`*_input.nc`, dataset "input") and the items to find
    (`*_output.nc`, dataset "output"), row for row the same users."""
    data = os.path.join(fold.dir, "nn-data")
    done = os.path.join(data, "done")
    if os.path.exists(done):
        return data
    os.makedirs(data, exist_ok=True)
    gen = os.path.join(tools_dir(), "nn-generate")
    log = os.path.join(data, "generate.log")
    rows = ["--rows", "--header", "-f", "features.idx"]
    for name, csv, dataset, samples, create in (
            ("input.nc", "train.csv", "input", "samples.idx", True),
            ("output.nc", "train.csv", "output", "samples.idx", False),
            ("val_input.nc", "val_tr.csv", "input", "val_samples.idx", False),
            ("val_output.nc", "val_te.csv", "output", "val_samples.idx", False),
            ("test_input.nc", "test_tr.csv", "input", "test_samples.idx", False)):
        args = [gen, "-d", dataset, "-i", os.path.join(fold.dir, csv), "-o", name, "-s", samples]
        args += rows + (["-c"] if create else [])
        cwd = os.getcwd()
        try:
            os.chdir(data)
            run_tool(args, log)
        finally:
            os.chdir(cwd)
    open(done, "w").close()
    return data


def pair_of_models(method, prefix):
    """The two models of a "<prefix>A+B" row: names as given (ease, a configs/ name), folders
    (anything with a path separator) made absolute."""
    return [k if os.path.sep not in k else os.path.abspath(k)
            for k in method[len(prefix):].split("+")]


def nn_work_dir(fold, config):
    """The fold's working folder of a network row: nn-<the config's or folder's name>."""
    return os.path.join(fold.dir, "nn-" + os.path.basename(config.rstrip("/")))


def config_dir(config):
    """configs/<config>, or the folder itself when given a path."""
    return config if os.path.isabs(config) else os.path.join(ROOT, "configs", config)


def nn_network(config, warm_from=None):
    """A row for configs/<config> (or any folder holding network.json and train.cdl, given as
    nn:<folder>): trained on the training users with the held-out validation
    users (nn-train --validation; the network of the best validation recall@K is kept), then
    nn-predict's top 100 for the test users, their input items filtered out. With warm_from
    (another config or folder), that network is trained first, as its own row would be, and
    this one starts from it (nn-train --warm-start); the seconds include both."""
    def run(fold, log, settings):
        data = nn_datasets(fold)
        warm_args = []
        if warm_from:
            nn_network(warm_from)(fold, log, settings)
            warm_args = ["--warm-start", os.path.join(nn_work_dir(fold, warm_from), "network.nc")]
        source = config_dir(config)
        work = nn_work_dir(fold, config)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        for name in os.listdir(data):
            os.symlink(os.path.join(data, name), os.path.join(work, name))
        for name in ("network.json", "train.cdl"):
            shutil.copy(os.path.join(source, name), work)
        tools = tools_dir()
        log_path = os.path.join(work, "run.log")
        train = [os.path.join(tools, "nn-train"), "train.cdl", "--validation", "val_input.nc",
                 "--validation", "val_output.nc", "--validation-k", str(settings["nn_k"]),
                 "--validation-interval", str(settings["nn_interval"]),
                 "--patience", str(settings["nn_patience"]), "--checkpoint-interval", "0"]
        train += warm_args
        if settings["nn_epochs"]:
            train += ["-e", str(settings["nn_epochs"])]
        cwd = os.getcwd()
        try:
            os.chdir(work)
            run_tool(train, log_path)
            run_tool([os.path.join(tools, "nn-predict"), "-n", "network.nc", "--data",
                      "test_input.nc", "-f", "test_input.nc", "-k", str(TOP), "-o",
                      "features.idx", "--sample-index", "test_samples.idx", "-s", "recs"],
                     log_path)
        finally:
            os.chdir(cwd)
        recs, _ = ev.read_recs(os.path.join(work, "recs"))
        kept, best = None, None
        with open(log_path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("kept the network of epoch "):
                    kept = int(line.split()[5])
                if line.startswith("validation after epoch ") and "(best so far)" in line:
                    words = line.split()
                    best = (int(words[3]), float(words[words.index(f"recall@{settings['nn_k']}") + 1].rstrip(",")))
        chosen = {"epoch": kept if kept is not None else (best[0] if best else None)}
        if best:
            chosen[f"validation recall@{settings['nn_k']}"] = best[1]
        return recs, chosen
    return run


def full_scores(kind, fold, log, settings):
    """Every item's score for the validation and the test users, over the fold's columns: EASE at
    its validation-chosen lambda, or a network of configs/ (or a folder) trained as its own row
    is, then scored in full from Python (nnsuite) instead of its top 100."""
    if kind == "ease":
        best = None
        for lam in settings["ease_lambdas"]:
            b = ease_weights(fold.x_train, lam)
            score = fold.metrics("val", fold.recs("val", fold.x_val @ b))[settings["select"]]
            if best is None or score > best[0]:
                best = (score, b)
        return {part: np.asarray(getattr(fold, f"x_{part}") @ best[1]) for part in ("val", "test")}
    sys.path.insert(0, os.path.join(os.path.dirname(tools_dir()), "..", "python"))
    import nnsuite  # noqa: E402 (the build tree's module, beside the tools)
    nn_network(kind)(fold, log, settings)
    work = nn_work_dir(fold, kind)
    model = nnsuite.Model.load(os.path.join(work, "network.nc"), threads=settings["threads"])
    names = model.items(model.input_layers[0])
    out_names = model.items(model.output_layers[0])
    in_col = {n: i for i, n in enumerate(names) if n}
    out_col = {n: i for i, n in enumerate(out_names) if n}
    to_in = np.array([in_col[str(m)] for m in fold.items])
    to_out = np.array([out_col[str(m)] for m in fold.items])
    scores = {}
    for part in ("val", "test"):
        x = getattr(fold, f"x_{part}")
        xi = sp.csr_matrix((x.data.astype(np.float32), to_in[x.indices], x.indptr),
                           shape=(x.shape[0], len(names)))
        xi.sort_indices()
        scores[part] = model.outputs(xi)[:, to_out]
    return scores


def blend(kinds):
    """A row for blend:A+B: two models' scores, each standardised per user (mean 0, deviation 1
    over the items), mixed as w A + (1 - w) B with w from 0, 0.1, ..., 1 chosen on the
    validation users. w = 1 or 0 is one model alone, so the row is never below the better one
    on the validation users."""
    def run(fold, log, settings):
        parts = []
        for kind in kinds:
            s = full_scores(kind, fold, log, settings)
            parts.append({k: (v - v.mean(axis=1, keepdims=True)) /
                          (v.std(axis=1, keepdims=True) + 1e-12) for k, v in s.items()})
        best = None
        for w in np.linspace(0, 1, 11):
            mixed = w * parts[0]["val"] + (1 - w) * parts[1]["val"]
            score = fold.metrics("val", fold.recs("val", mixed))[settings["select"]]
            log(f"    blend w {w:.1f}: validation {settings['select']} {score:.4f}")
            if best is None or score > best[0]:
                best = (score, w)
        w = best[1]
        return fold.recs("test", w * parts[0]["test"] + (1 - w) * parts[1]["test"]), {"w": w}
    return run


def linear_variant(name):
    def run(fold, log, settings):
        import linear_variants_peer  # the DLAE's variants (NumPy)
        return linear_variants_peer.METHODS[name](fold, log, settings)
    return run


def higher_order(fold, log, settings):
    import higher_order_peer  # the pairwise model's NumPy code
    return higher_order_peer.higher_order(fold, log, settings)


METHODS = {
    "popularity": popularity,
    "ease": ease,
    "higher-order": higher_order,
    **{name: linear_variant(name) for name in
       ("dlae", "dlae-tuned", "rdlae", "dlae-popularity", "dlae-user-knn")},
    "mult-dae-torch": torch_mult("dae"),
    "mult-vae-torch": torch_mult("vae"),
    "recvae-torch": torch_recvae,
    "vasp-torch": torch_vasp,
    "nn-recommender-autoencoder": nn_network("recommender-autoencoder"),
    "nn-mult-dae": nn_network("recommender-mult-dae"),
    "nn-mult-vae": nn_network("recommender-mult-vae"),
    "nn-linear-dae": nn_network("recommender-linear-dae"),
}

# The rows run by default (docs/quality.md's tables); the others are asked for by name.
DEFAULT_METHODS = ("popularity", "ease", "mult-dae-torch", "mult-vae-torch",
                   "nn-recommender-autoencoder", "nn-mult-dae", "nn-mult-vae", "nn-linear-dae")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("ratings", nargs="?",
                        default=os.path.join(ROOT, "samples", "movielens", "ratings.csv"),
                        help="MovieLens ratings CSV (default: the bundled ml-latest-small)")
    parser.add_argument("-w", "--work", default=os.path.join(ROOT, "out", "bench-quality"),
                        help="work directory (default out/bench-quality)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help="comma list (default: " + ",".join(DEFAULT_METHODS) + "; more: " +
                        ", ".join(m for m in METHODS if m not in DEFAULT_METHODS) +
                        ", or nn:DIR for the network.json and train.cdl in DIR, or blend:A+B "
                        "(A, B: ease, a configs/ name or a folder) for two models' standardised "
                        "scores mixed by a weight chosen on the validation users, or warm:A+B "
                        "(A, B: a configs/ name or a folder) for B trained warm-started from A")
    parser.add_argument("--folds", type=int, help="folds (default: 5, or 1 for >= 50,000 users)")
    parser.add_argument("--heldout", type=int, default=10000,
                        help="with one fold: test and validation users each (default 10000)")
    parser.add_argument("--select", default="ndcg@100", choices=[n for n, _ in CUTOFFS],
                        help="validation metric that picks lambda and epochs (default ndcg@100)")
    parser.add_argument("--ease-lambdas", default="10,20,50,100,200,300,500,1000",
                        help="EASE lambdas tried on the validation users")
    parser.add_argument("--torch-epochs", type=int, default=200, help="PyTorch epochs (200)")
    parser.add_argument("--recvae-gammas", default="0.005,0.01,0.02",
                        help="RecVAE's KL weights per user item tried on the validation users "
                        "(default 0.005,0.01,0.02; the paper's ML-20M value is 0.005)")
    parser.add_argument("--vasp-lrs", default="0.001,0.0003",
                        help="VASP's NAdam learning rates tried on the validation users "
                        "(default 0.001,0.0003)")
    parser.add_argument("--anneal-steps", type=int, default=0,
                        help="Mult-VAE updates to reach beta 0.2 (default: scaled to the run)")
    parser.add_argument("--eval-every", type=int, default=5, help="epochs between validations")
    parser.add_argument("--nn-k", type=int, default=20,
                        help="nn-train --validation-k: the suite's networks keep the epoch of the "
                        "best validation recall@K (default 20)")
    parser.add_argument("--nn-interval", type=int, default=5, help="nn-train --validation-interval")
    parser.add_argument("--nn-patience", type=int, default=10, help="nn-train --patience")
    parser.add_argument("--nn-epochs", type=int, default=0,
                        help="nn-train -e (default: the config's Epochs)")
    parser.add_argument("--only-folds", help="comma list of folds to run (default: all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="append one JSON object per fold and method here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m.startswith("nn:"):
            METHODS[m] = nn_network(os.path.abspath(m[3:]))
        elif m.startswith("warm:") and m.count("+") == 1:
            first, then = pair_of_models(m, "warm:")
            METHODS[m] = nn_network(then, warm_from=first)
        elif m.startswith("blend:") and m.count("+") == 1:
            kinds = pair_of_models(m, "blend:")
            METHODS[m] = blend(kinds)
        elif m not in METHODS:
            parser.error(f"--methods: unknown {m!r}; expected some of {', '.join(METHODS)}")

    def log(text):
        print(text, file=sys.stderr, flush=True)

    data_dir = os.path.join(os.path.abspath(args.work), "data")
    folds = args.folds
    if folds is None:
        users, _ = split.read_positives(args.ratings, 4.0)
        folds = 1 if len(users) >= 50000 else 5
    summaries, n_users, n_pos = split.split(args.ratings, data_dir, folds, args.heldout)
    log(f"{n_users} users, {n_pos} positives; {folds} fold(s): " + "; ".join(
        f"{s['train_users']} train / {s['val_users']} val / {s['test_users']} test users, "
        f"{s['items']} items" for s in summaries))
    settings = {"select": args.select, "threads": args.threads, "verbose": args.verbose,
                "ease_lambdas": [float(v) for v in args.ease_lambdas.split(",")],
                "torch_epochs": args.torch_epochs, "anneal_steps": args.anneal_steps,
                "recvae_gammas": [float(v) for v in args.recvae_gammas.split(",")],
                "vasp_lrs": [float(v) for v in args.vasp_lrs.split(",")],
                "eval_every": args.eval_every, "nn_k": args.nn_k, "nn_interval": args.nn_interval,
                "nn_patience": args.nn_patience, "nn_epochs": args.nn_epochs}
    results = {m: [] for m in methods}
    chosen_folds = range(folds) if not args.only_folds else [
        int(v) for v in args.only_folds.split(",")]
    for f in chosen_folds:
        fold = Fold(os.path.join(data_dir, f"fold{f}"))
        for m in methods:
            start = time.time()
            recs, chosen = METHODS[m](fold, log, settings)
            scores = fold.metrics("test", recs)
            scores["seconds"] = time.time() - start
            results[m].append((scores, chosen))
            log(f"  fold {f} {m}: " + ", ".join(f"{n} {scores[n]:.4f}" for n, _ in CUTOFFS) +
                f" ({scores['seconds']:.1f} s) {chosen}")
            if args.json:
                with open(args.json, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"fold": f, "method": m, **scores, **chosen}) + "\n")
    print(format_table(results, folds))
    return 0


def format_table(results, folds):
    names = [n for n, _ in CUTOFFS]
    width = max(len("method"), *(len(m) for m in results))
    head = f"{'method':<{width}}  " + "  ".join(f"{n:>10}" for n in names) + f"  {'seconds':>8}"
    lines = [head, "-" * len(head)]
    for m, rows in results.items():
        cells = []
        for n in names:
            values = [r[0][n] for r in rows]
            cells.append(f"{np.mean(values):>10.4f}")
        seconds = sum(r[0]["seconds"] for r in rows)
        lines.append(f"{m:<{width}}  " + "  ".join(cells) + f"  {seconds:>8.0f}")
    if folds > 1:
        lines.append(f"(means over {folds} folds; test users per fold: "
                     f"{', '.join(str(r[0]['users']) for r in next(iter(results.values())))})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
