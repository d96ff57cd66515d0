#!/usr/bin/python3
"""PyTorch peers for the MovieLens sample: EASE and a sparse autoencoder shaped like our engine's,
trained on the same train.csv and scored by movielens_eval.py's code on the same test.csv.

Both peers see the train ratings as an indicator matrix X (users x movies rated in train; a movie
that occurs only in test can never be recommended and simply counts as a miss). Train movies are
removed from every user's list before taking the top K, as nn-predict does with a filter file.

* EASE (Steck 2019): B = I - P * diag(1/diag(P)) with P = (X^T X + lambda I)^-1, scores = X B.
* Autoencoder: input = the user's train movies (indicator, optional denoising), hidden layers with
  sigmoid, output = all movies. Loss 'ce': sigmoid output, cross entropy summed over all movies
  (DSSTNE's CrossEntropy on a sparse target); loss 'softmax': softmax output, multinomial
  log-likelihood with target weight 1/nnz per rated movie (DSSTNE's sparse SoftMax CrossEntropy,
  the Mult-DAE objective up to a per-user scale). Weights are initialised like DSSTNE's Xavier
  (U(-a/2, a/2), a = sqrt(6/(n_in+n_out))), biases 0; L2 decay applies to weights only, and the
  gradient is the mean over the minibatch, as in the engine.

--tune runs a small grid over hidden size, epochs and learning rate (about 3-4 minutes on 2 threads)
and prints every configuration's recall, so the best one can be carried over to our engine.
"""

import argparse
import itertools
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import movielens_eval as ev  # noqa: E402  (same metrics code for every method)

PROG = "movielens_peer.py"


def build_matrix(train):
    """Returns (users, movies, X) with X a dense float32 indicator [users][movies]."""
    users = sorted(train, key=ev.label_key)
    movies = sorted({m for items in train.values() for m in items}, key=ev.label_key)
    column = {m: j for j, m in enumerate(movies)}
    rows, cols = [], []
    for r, user in enumerate(users):
        for movie in train[user]:
            rows.append(r)
            cols.append(column[movie])
    x = torch.zeros(len(users), len(movies))
    x[torch.tensor(rows), torch.tensor(cols)] = 1.0
    return users, movies, x


def top_k(scores, x, users, movies, k):
    """Masks train movies and returns ({user: [movie, ...]}, {user: [score, ...]})."""
    scores = scores.masked_fill(x > 0, -math.inf)
    values, indices = scores.topk(k, dim=1)
    recs, recs_scores = {}, {}
    for r, user in enumerate(users):
        keep = [i for i, v in enumerate(values[r].tolist()) if v != -math.inf]
        recs[user] = [movies[j] for j in indices[r, keep].tolist()]
        recs_scores[user] = values[r, keep].tolist()
    return recs, recs_scores


def write_recs(path, recs, recs_scores, score_format):
    """Writes our recommendation format: user<TAB>movie,score:movie,score:...:"""
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        for user in recs:
            body = "".join(f"{m},{s:{score_format}}:" for m, s in zip(recs[user], recs_scores[user]))
            out.write(f"{user}\t{body}\n")


def ease_scores(x, lam):
    """Closed-form EASE item-item weights applied to X (float32 is as accurate here as float64)."""
    gram = x.T @ x
    gram.diagonal().add_(lam)
    p = torch.cholesky_inverse(torch.linalg.cholesky(gram))
    b = -p / p.diagonal()
    b.diagonal().zero_()
    return x @ b


class AutoEncoder(torch.nn.Module):
    """Input -> hidden layers (sigmoid by default) -> linear output; the loss applies the output
    sigmoid or softmax."""

    ACTIVATIONS = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "relu": torch.relu}

    def __init__(self, n_items, hidden, activation="sigmoid"):
        super().__init__()
        self.activation = self.ACTIVATIONS[activation]
        sizes = [n_items] + list(hidden) + [n_items]
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        for layer in self.layers:
            bound = 0.5 * math.sqrt(6.0 / (layer.in_features + layer.out_features))
            torch.nn.init.uniform_(layer.weight, -bound, bound)
            torch.nn.init.zeros_(layer.bias)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


def ae_loss(logits, target, loss):
    """Per-batch loss, summed over movies and averaged over examples (gradient = mean over batch)."""
    if loss == "ce":
        # softplus(z) - z*t is sigmoid cross entropy on logits z (stable); it is faster here than
        # binary_cross_entropy_with_logits.
        return (torch.nn.functional.softplus(logits) - logits * target).sum() / logits.shape[0]
    weights = target / target.sum(dim=1, keepdim=True).clamp(min=1.0)
    return -(torch.log_softmax(logits, dim=1) * weights).sum() / logits.shape[0]


def make_optimizer(model, cfg):
    """Weights get L2 decay (DSSTNE's lambda), biases none."""
    groups = [
        {"params": [l.weight for l in model.layers], "weight_decay": cfg["weight_decay"]},
        {"params": [l.bias for l in model.layers], "weight_decay": 0.0},
    ]
    if cfg["optimizer"] == "adam":
        return torch.optim.Adam(groups, lr=cfg["lr"], foreach=True)
    if cfg["optimizer"] == "rmsprop":
        return torch.optim.RMSprop(groups, lr=cfg["lr"], alpha=cfg["rms_decay"], eps=1e-8,
                                   foreach=True)
    return torch.optim.SGD(groups, lr=cfg["lr"], foreach=True)


def train_autoencoder(x, cfg, report_every=None, evaluate=None):
    """Trains on the rows of x; returns (model, history of (epoch, recall) when evaluate given)."""
    torch.manual_seed(cfg["seed"])
    model = AutoEncoder(x.shape[1], cfg["hidden"], cfg["activation"])
    optimizer = make_optimizer(model, cfg)
    history = []
    for epoch in range(1, cfg["epochs"] + 1):
        model.train()
        order = torch.randperm(x.shape[0])
        total = 0.0
        for start in range(0, x.shape[0], cfg["batch"]):
            batch = x[order[start:start + cfg["batch"]]]
            # Denoising as in the engine: drop each non-zero with p, scale survivors by 1/(1-p).
            inputs = torch.nn.functional.dropout(batch, cfg["denoise"]) if cfg["denoise"] else batch
            loss = ae_loss(model(inputs), batch, cfg["loss"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * batch.shape[0]
        if evaluate and report_every and (epoch % report_every == 0 or epoch == cfg["epochs"]):
            recall = evaluate(model)
            history.append((epoch, recall))
            print(f"  epoch {epoch:3d}  loss/user {total / x.shape[0]:10.3f}  recall@10 {recall:.4f}",
                  flush=True)
    return model, history


def ae_scores(model, x):
    model.eval()
    with torch.no_grad():
        return model(x)


def describe(cfg):
    hidden = ",".join(str(h) for h in cfg["hidden"])
    return (f"ae-{cfg['loss']} h={hidden} {cfg['activation']} {cfg['optimizer']} lr={cfg['lr']:g} "
            f"ep={cfg['epochs']} b={cfg['batch']} l2={cfg['weight_decay']:g} "
            f"dn={cfg['denoise']:g}")


def parse_hidden(text):
    """'256' or '600,200' -> [256] or [600, 200] (one size per hidden layer)."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"hidden sizes {text!r}: expected e.g. 256 or 600,200") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"hidden sizes {text!r}: sizes must be >= 1")
    return sizes


def tune(x, users, movies, train, test, base):
    """Small grid per loss; prints each run and the best. Returns the best config per loss."""
    grid = {
        "hidden": [[128], [256], [512], [1024]],
        "lr": [1e-3, 3e-3],
        "optimizer": ["adam", "rmsprop"],
    }
    best = {}
    for loss in ("ce", "softmax"):
        for hidden, lr, opt in itertools.product(grid["hidden"], grid["lr"], grid["optimizer"]):
            cfg = dict(base, loss=loss, hidden=hidden, lr=lr, optimizer=opt)

            def recall_of(model):
                recs, _ = top_k(ae_scores(model, x), x, users, movies, 10)
                return ev.evaluate(recs, train, test, 10)["recall@10"]

            start = time.time()
            _, history = train_autoencoder(x, cfg, report_every=max(1, cfg["epochs"] // 5),
                                           evaluate=recall_of)
            top_epoch, top_recall = max(history, key=lambda h: h[1])
            print(f"{describe(cfg)}: best recall@10 {top_recall:.4f} at epoch {top_epoch} "
                  f"({time.time() - start:.1f} s)", flush=True)
            if loss not in best or top_recall > best[loss][1]:
                best[loss] = (dict(cfg, epochs=top_epoch), top_recall)
    for loss, (cfg, recall) in best.items():
        print(f"best {loss}: {describe(cfg)} recall@10 {recall:.4f}")
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__.split("\n\n")[0],
        epilog=ev.DEFINITIONS.format(k="--k"))
    parser.add_argument("train", help="train.csv (userId,movieId,rating,timestamp)")
    parser.add_argument("test", help="test.csv")
    parser.add_argument("--methods", default="ease,ae-ce,ae-softmax",
                        help="comma list of ease, ae-ce, ae-softmax (default: all three)")
    parser.add_argument("-k", "--k", type=int, default=10, help="list length K (default 10)")
    parser.add_argument("--ease-lambda", type=float, default=500.0, help="EASE L2 (default 500)")
    parser.add_argument("--hidden", type=parse_hidden, default=None,
                        help="hidden sizes, e.g. 256 or 600,200 (default: 512 for ce, 256 for "
                        "softmax, the best found by --tune)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs (default: 40 for ce, 40 for softmax)")
    parser.add_argument("--lr", type=float, default=None,
                        help="learning rate (default: 1e-3)")
    parser.add_argument("--activation", choices=("sigmoid", "tanh", "relu"), default="sigmoid",
                        help="hidden activation (default sigmoid)")
    parser.add_argument("--optimizer", choices=("adam", "rmsprop", "sgd"), default="adam")
    parser.add_argument("--rms-decay", type=float, default=0.9,
                        help="RMSprop decay (DSSTNE's mu; default 0.9)")
    parser.add_argument("--batch", type=int, default=32, help="minibatch (default 32)")
    parser.add_argument("--weight-decay", type=float, default=1e-4,
                        help="L2 on weights, DSSTNE's lambda (default 1e-4)")
    parser.add_argument("--denoise", type=float, default=0.0,
                        help="input denoising probability (default 0)")
    parser.add_argument("--seed", type=int, default=12134, help="torch seed (default 12134)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--tune", action="store_true",
                        help="grid over hidden size, lr, optimizer and epochs, then stop")
    parser.add_argument("--recs-dir", help="write <method>.recs files in our format here")
    parser.add_argument("--score-format", default=".6f",
                        help="format of written scores (default .6f)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    try:
        train = ev.read_ratings(args.train)
        test = ev.read_ratings(args.test)
    except (ev.InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    users, movies, x = build_matrix(train)
    print(f"train: {len(users)} users x {len(movies)} movies, {int(x.sum())} ratings "
          f"(density {x.mean().item():.4f})", flush=True)

    defaults = {"ce": {"hidden": [512], "epochs": 40, "lr": 1e-3},
                "softmax": {"hidden": [256], "epochs": 40, "lr": 1e-3}}
    base = {"activation": args.activation, "optimizer": args.optimizer, "rms_decay": args.rms_decay, "batch": args.batch,
            "weight_decay": args.weight_decay, "denoise": args.denoise, "seed": args.seed,
            "epochs": args.epochs or 40, "hidden": args.hidden or [256], "lr": args.lr or 1e-3}
    if args.tune:
        tune(x, users, movies, train, test, base)
        return 0

    rows = [("popularity", ev.evaluate(ev.popularity_recs(train, args.k, test), train, test,
                                       args.k))]
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        start = time.time()
        if method == "ease":
            name = f"ease lambda={args.ease_lambda:g}"
            scores = ease_scores(x, args.ease_lambda)
        elif method in ("ae-ce", "ae-softmax"):
            loss = method[3:]
            cfg = dict(base, loss=loss)
            for key in ("hidden", "epochs", "lr"):
                if getattr(args, key) is None:
                    cfg[key] = defaults[loss][key]
            name = describe(cfg)
            print(f"training {name}", flush=True)
            model, _ = train_autoencoder(x, cfg)
            scores = ae_scores(model, x)
        else:
            parser.error(f"--methods: unknown {method!r}; expected ease, ae-ce or ae-softmax")
        recs, recs_scores = top_k(scores, x, users, movies, args.k)
        rows.append((name, ev.evaluate(recs, train, test, args.k)))
        print(f"{name}: {time.time() - start:.1f} s", flush=True)
        if args.recs_dir:
            os.makedirs(args.recs_dir, exist_ok=True)
            write_recs(os.path.join(args.recs_dir, f"{method}.recs"), recs, recs_scores,
                       args.score_format)
    print()
    print(ev.DEFINITIONS.format(k=args.k))
    print()
    print(ev.format_table(rows, args.k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
