#!/usr/bin/python3
"""PyTorch peers for the MovieLens sample: EASE and a sparse autoencoder shaped like our engine's,
trained on the same train.csv and scored by movielens_eval.py's code on the same test.csv.

Both peers see the train ratings as an indicator matrix X (users x movies rated in train; a movie
that occurs only in test can never be recommended and simply counts as a miss). Train movies are
removed from every user's list before taking the top K, as nn-predict does with a filter file.

* EASE (Steck 2019): B = I - P * diag(1/diag(P)) with P = (X^T X + lambda I)^-1, scores = X B.
* Autoencoder: input = the user's train movies (indicator, optional denoising), hidden layers
  (sigmoid unless --activation), output = all movies. Loss 'ce': sigmoid output, cross entropy
  summed over all movies (DSSTNE's CrossEntropy on a sparse target); loss 'softmax': softmax
  output, multinomial log-likelihood with target weight 1/nnz per rated movie (DSSTNE's sparse
  SoftMax CrossEntropy, the Mult-DAE objective up to a per-user scale). Weights are initialised
  like DSSTNE's Xavier (U(-a/2, a/2), a = sqrt(6/(n_in+n_out))), biases 0; L2 decay applies to
  weights only, and the gradient is the mean over the minibatch, as in the engine.

Defaults (DEFAULTS below) are the best settings found on the bundled ml-latest-small with
split_ratings.py's default 80/20 split (610 users: another --seed moved ae-ce by -0.004 and
ae-softmax by -0.008, so differences below ~0.01 are noise). A full default run takes about 1.7 min
on 2 quiet cores. recall@10 (@N = after N epochs):
  popularity 0.170; EASE 0.353 (lambda 100-250), 0.346 (500), 0.334 (1000)
  ae-ce, 1 hidden layer, batch 32, denoising 0.5:
    256 sigmoid, RMSprop lr 1e-3, L2 1e-3    0.318 @60, 0.328 @80 epochs  (the default)
    512 sigmoid, RMSprop lr 1e-3, L2 1e-4    0.325 @40, then overfits (0.315 @80)
    256 sigmoid, RMSprop lr 3e-3, L2 1e-4    0.319 @20, then overfits (0.256 @80)
    256 sigmoid, Adam lr 3e-3, L2 1e-4       0.299 @40, 0.314 @60
    128 sigmoid, RMSprop lr 1e-3             stuck at popularity level (0.15-0.16) for 80 epochs;
                                             256 with Adam lr 1e-3 and no denoising also sat at
                                             ~0.17 for 40 epochs: the sigmoid-CE net first learns
                                             popularity and needs width and step size to leave it
    256 sigmoid, RMSprop lr 1e-3, batch 64   0.186 @70: half the updates per epoch, still near
                                             popularity (so DSSTNE's default minibatch of 1024, one
                                             update per epoch here, would not learn at all)
  ae-softmax, 1 hidden layer of 256 unless said, batch 32:
    sigmoid, Adam lr 3e-3, no denoising      0.307 @20 (the default), then overfits (0.269 @60)
    512 sigmoid, Adam lr 1e-3, denoising 0.5 0.308 @50
    tanh, Adam 1e-3, batch 64, L2 1e-5, denoising 0.5 (configs/recommender-softmax): 0.303 @30,
                                             0.302 @40, 0.290 @60
--tune trains a grid (hidden sizes x learning rates x optimizers, per ae method) and prints the
recall every epochs/8 epochs; each point takes about a minute on 2 quiet cores.
"""

import argparse
import itertools
import math
import os
import sys
import time

# On a shared, busy machine OpenMP threads that spin while waiting make every small tensor
# operation several times slower (measured 3x per epoch here); sleeping waits cost little when idle.
# Must be set before torch loads its OpenMP runtime; an explicit setting in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import movielens_eval as ev  # noqa: E402  (same metrics code for every method)

PROG = "movielens_peer.py"


# Best settings found on the bundled ml-latest-small 80/20 split (numbers in the docstring above);
# every one can be overridden on the command line.
DEFAULTS = {
    "ce": {"hidden": [256], "activation": "sigmoid", "optimizer": "rmsprop", "lr": 1e-3,
           "epochs": 80, "batch": 32, "weight_decay": 1e-3, "denoise": 0.5},
    "softmax": {"hidden": [256], "activation": "sigmoid", "optimizer": "adam", "lr": 3e-3,
                "epochs": 20, "batch": 32, "weight_decay": 1e-4, "denoise": 0.0},
}


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
            pairs = zip(recs[user], recs_scores[user])
            body = "".join(f"{m},{s:{score_format}}:" for m, s in pairs)
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
    """Loss summed over movies and averaged over the examples (gradient = batch mean)."""
    if loss == "ce":
        # softplus(z) - z*t is sigmoid cross entropy on logits z (stable); it is faster here than
        # binary_cross_entropy_with_logits.
        return (torch.nn.functional.softplus(logits) - logits * target).sum() / logits.shape[0]
    weights = target / target.sum(dim=1, keepdim=True).clamp(min=1.0)
    return -(torch.log_softmax(logits, dim=1) * weights).sum() / logits.shape[0]


def make_optimizer(model, cfg):
    """Weights get L2 decay (DSSTNE's lambda), biases none."""
    groups = [
        {"params": [layer.weight for layer in model.layers],
         "weight_decay": cfg["weight_decay"]},
        {"params": [layer.bias for layer in model.layers], "weight_decay": 0.0},
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
            print(f"  epoch {epoch:3d}  loss/user {total / x.shape[0]:10.3f}  "
                  f"recall@10 {recall:.4f}", flush=True)
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


def tune(x, users, movies, train, test, configs, grid):
    """Trains every grid point for each loss, scoring every few epochs; prints the best of each."""
    def recall_of(model):
        recs, _ = top_k(ae_scores(model, x), x, users, movies, 10)
        return ev.evaluate(recs, train, test, 10)["recall@10"]

    for loss, base in configs.items():
        best = None
        for hidden, lr, opt in itertools.product(grid["hidden"], grid["lr"], grid["optimizer"]):
            cfg = dict(base, hidden=[hidden], lr=lr, optimizer=opt or base["optimizer"])
            print(describe(cfg), flush=True)
            start = time.time()
            _, history = train_autoencoder(x, cfg, report_every=max(1, cfg["epochs"] // 8),
                                           evaluate=recall_of)
            top_epoch, top_recall = max(history, key=lambda h: h[1])
            print(f"  -> best recall@10 {top_recall:.4f} at epoch {top_epoch} "
                  f"({time.time() - start:.1f} s)", flush=True)
            if best is None or top_recall > best[1]:
                best = (dict(cfg, epochs=top_epoch), top_recall)
        print(f"best {loss}: {describe(best[0])}: recall@10 {best[1]:.4f}", flush=True)


def float_list(text):
    return [float(v) for v in text.split(",") if v]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog=ev.DEFINITIONS.format(k="--k"))
    parser.add_argument("train", help="train.csv (userId,movieId,rating,timestamp)")
    parser.add_argument("test", help="test.csv")
    parser.add_argument("--methods", default="ease,ae-ce,ae-softmax",
                        help="comma list of ease, ae-ce, ae-softmax (default: all three)")
    parser.add_argument("-k", "--k", type=int, default=10, help="list length K (default 10)")
    parser.add_argument("--ease-lambda", type=float, default=500.0, help="EASE L2 (default 500)")
    group = parser.add_argument_group(
        "autoencoder settings (each defaults to the best found for its loss, see DEFAULTS)")
    group.add_argument("--hidden", type=parse_hidden, help="hidden sizes, e.g. 256 or 600,200")
    group.add_argument("--activation", choices=("sigmoid", "tanh", "relu"),
                       help="hidden activation")
    group.add_argument("--optimizer", choices=("adam", "rmsprop", "sgd"))
    group.add_argument("--lr", type=float, help="learning rate")
    group.add_argument("--epochs", type=int)
    group.add_argument("--batch", type=int, help="minibatch")
    group.add_argument("--weight-decay", type=float, help="L2 on weights (DSSTNE's lambda)")
    group.add_argument("--denoise", type=float,
                       help="input denoising probability (DSSTNE's Denoising p)")
    group.add_argument("--rms-decay", type=float, default=0.9,
                       help="RMSprop decay, DSSTNE's mu (default 0.9)")
    group.add_argument("--seed", type=int, default=12134, help="torch seed (default 12134)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--tune", action="store_true",
                        help="train the grid below for each ae method in --methods, report "
                        "recall@10 every epochs/8 epochs and the best point, then stop")
    parser.add_argument("--tune-hidden", type=lambda t: [int(v) for v in t.split(",")],
                        default=[128, 256, 512],
                        help="single hidden layer sizes to try (default 128,256,512)")
    parser.add_argument("--tune-lr", type=float_list, default=[1e-3, 3e-3],
                        help="learning rates to try (default 1e-3,3e-3)")
    parser.add_argument("--tune-optimizer", default="",
                        help="comma list of optimizers to try (default: the loss's default)")
    parser.add_argument("--recs-dir", help="write <method>.recs files in our format here")
    parser.add_argument("--score-format", default=".6f",
                        help="format of written scores (default .6f)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for method in methods:
        if method not in ("ease", "ae-ce", "ae-softmax"):
            parser.error(f"--methods: unknown {method!r}; expected ease, ae-ce or ae-softmax")

    try:
        train = ev.read_ratings(args.train)
        test = ev.read_ratings(args.test)
    except (ev.InputError, OSError, UnicodeDecodeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    users, movies, x = build_matrix(train)
    print(f"train: {len(users)} users x {len(movies)} movies, {int(x.sum())} ratings "
          f"(density {x.mean().item():.4f})", flush=True)

    configs = {}
    for method in methods:
        if method.startswith("ae-"):
            loss = method[3:]
            cfg = dict(DEFAULTS[loss], loss=loss, rms_decay=args.rms_decay, seed=args.seed)
            for key in ("hidden", "activation", "optimizer", "lr", "epochs", "batch",
                        "weight_decay", "denoise"):
                if getattr(args, key) is not None:
                    cfg[key] = getattr(args, key)
            configs[loss] = cfg
    if args.tune:
        grid = {"hidden": args.tune_hidden, "lr": args.tune_lr,
                "optimizer": [o for o in args.tune_optimizer.split(",") if o] or [None]}
        tune(x, users, movies, train, test, configs, grid)
        return 0

    rows = [("popularity", ev.evaluate(ev.popularity_recs(train, args.k, test), train, test,
                                       args.k))]
    for method in methods:
        start = time.time()
        if method == "ease":
            name = f"ease lambda={args.ease_lambda:g}"
            scores = ease_scores(x, args.ease_lambda)
        else:
            cfg = configs[method[3:]]
            name = describe(cfg)
            print(f"training {name}", flush=True)
            model, _ = train_autoencoder(x, cfg)
            scores = ae_scores(model, x)
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
