#!/usr/bin/python3
"""PyTorch VASP (Vancura and Kordik, "Deep Variational Autoencoder with Shallow Parallel Path for
Top-N Recommendation (VASP)", ICANN 2021), a peer row of scripts/bench_quality.py
(`--methods vasp-torch`), written from the paper and the authors' published description of
their model; a deep and a shallow model trained jointly, end to end.

The model, for a user's binary item vector x:
  shallow  an items x items weight matrix without bias, its diagonal held at 0 after every
           update (no item predicts itself, as EASE), then a sigmoid: s = sigmoid(x S);
  deep     a VAE: the encoder runs x through ENCODER_LAYERS layers of `hidden` units, each
           layer_norm(swish(W h_prev + the sum of the earlier layers' outputs)), then a linear
           mean and log-variance of a `latent`-wide code z (sampled in training, the mean in
           prediction); the decoder runs z through DECODER_LAYERS such layers and ends in two
           sigmoid outputs over the items, one from the last layer and one straight from z,
           multiplied: d = sigmoid(D_1 e_last) * sigmoid(D_2 z);
  output   p = d * s, each item's probability (the two paths as an AND: an item scores high
           only when both want it).
Loss: the sigmoid focal loss (alpha 0.25, gamma 2) of p against the target, summed over the
items and averaged over the rows, plus the KL term -0.5 mean(1 + logvar - mu^2 - e^logvar)
(a mean over the code's entries, unweighted).
Data: each step's rows are three views of three minibatches of users: a user's items in and
the same items out; and, with each user's items shuffled and cut in halves, the first half in
and the second out, and the second in and the first out (so most targets are not in the input).
Optimizer: NAdam. The paper trains ML-20M (116,000 users) with hidden 4096 and latent 2048 at
learning rates 5e-5 then 1e-5; with a few hundred training users that is a handful of updates,
so here the widths are 600 and 200 (as recvae_peer.py) and the rate is chosen on the validation
users (bench_quality.py --vasp-lrs), with the epoch of the best validation metric kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see movielens_peer.py

import numpy as np  # noqa: E402
import torch  # noqa: E402

from multvae_peer import BestEpoch, to_tensor  # noqa: E402  (the validation loop; CSR -> tensor)

SETTINGS = {"hidden": 600, "latent": 200, "lr": 1e-3, "batch": 128, "epochs": 150,
            "focal_alpha": 0.25, "focal_gamma": 2.0}
ENCODER_LAYERS = 7
DECODER_LAYERS = 5
PROBABILITY_FLOOR = 1e-7  # probabilities are clipped to [floor, 1 - floor] before the logs


class DenseStack(torch.nn.Module):
    """Layers whose every input is the previous output plus the sum of all earlier outputs,
    each followed by swish and a layer norm."""

    def __init__(self, n_in, hidden, count):
        super().__init__()
        dims = [n_in] + [hidden] * count
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(hidden) for _ in range(count))

    def forward(self, h):
        earlier = None
        for layer, norm in zip(self.layers, self.norms):
            pre = layer(h) if earlier is None else layer(h) + earlier
            h = norm(pre * torch.sigmoid(pre))
            earlier = h if earlier is None else earlier + h
        return h


class Vasp(torch.nn.Module):
    def __init__(self, n_items, hidden, latent):
        super().__init__()
        self.encoder = DenseStack(n_items, hidden, ENCODER_LAYERS)
        self.mu = torch.nn.Linear(hidden, latent)
        self.logvar = torch.nn.Linear(hidden, latent)
        self.decoder = DenseStack(latent, hidden, DECODER_LAYERS)
        self.from_decoder = torch.nn.Linear(hidden, n_items)
        self.from_code = torch.nn.Linear(latent, n_items)
        self.shallow = torch.nn.Linear(n_items, n_items, bias=False)
        self.zero_diagonal()

    def zero_diagonal(self):
        with torch.no_grad():
            self.shallow.weight.fill_diagonal_(0.0)

    def forward(self, x, sample):
        h = self.encoder(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if sample else mu
        deep = torch.sigmoid(self.from_decoder(self.decoder(z))) * torch.sigmoid(self.from_code(z))
        return deep * torch.sigmoid(self.shallow(x)), mu, logvar


def focal_loss(p, target, alpha, gamma):
    p = p.clamp(PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)
    cross_entropy = -(target * torch.log(p) + (1 - target) * torch.log(1 - p))
    p_true = target * p + (1 - target) * (1 - p)
    weight = target * alpha + (1 - target) * (1 - alpha)
    return (weight * (1 - p_true) ** gamma * cross_entropy).sum(dim=1).mean()


def half_splits(rows, rng):
    """Each user's items shuffled and cut in two: (first halves, second halves) as CSR rows."""
    first, second = rows.copy(), rows.copy()
    for r in range(rows.shape[0]):
        lo, hi = rows.indptr[r], rows.indptr[r + 1]
        order = rng.permutation(hi - lo)
        cut = (hi - lo) // 2
        first.data[lo:hi] = 0
        second.data[lo:hi] = 0
        first.data[lo + order[:cut]] = rows.data[lo + order[:cut]]
        second.data[lo + order[cut:]] = rows.data[lo + order[cut:]]
    first.eliminate_zeros()
    second.eliminate_zeros()
    return first, second


def train(x_train, settings, validate=None, seed=98765, log=None):
    """Trains on the CSR matrix x_train (binary). `validate(score_fn) -> metric` (higher is
    better) is called after every settings['eval_every'] epochs; the best epoch's weights are
    kept. Returns (score_fn, history [(epoch, metric)], best epoch)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n, n_items = x_train.shape
    x_train = x_train.astype(np.float32)
    x_train.data[:] = 1.0
    model = Vasp(n_items, settings["hidden"], settings["latent"])
    optimizer = torch.optim.NAdam(model.parameters(), lr=settings["lr"])
    keeper = BestEpoch(model, settings, validate, log, "vasp")

    def score_fn(rows):
        model.eval()
        with torch.no_grad():
            out = [model(to_tensor(rows[s:s + 1000]), sample=False)[0].numpy()
                   for s in range(0, rows.shape[0], 1000)]
        return np.concatenate(out) if out else np.zeros((0, n_items), np.float32)

    batch = settings["batch"]
    for epoch in range(1, settings["epochs"] + 1):
        model.train()
        whole, halves = rng.permutation(n), rng.permutation(n)
        total, rows_seen = 0.0, 0
        for start in range(0, n, batch):
            full = x_train[whole[start:start + batch]]
            first, second = half_splits(x_train[halves[start:start + batch]], rng)
            inputs = torch.cat([to_tensor(full), to_tensor(first), to_tensor(second)])
            targets = torch.cat([to_tensor(full), to_tensor(second), to_tensor(first)])
            p, mu, logvar = model(inputs, sample=True)
            kl = -0.5 * torch.mean(1 + logvar - mu ** 2 - torch.exp(logvar))
            loss = focal_loss(p, targets, settings["focal_alpha"], settings["focal_gamma"]) + kl
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            model.zero_diagonal()
            total += loss.item() * inputs.shape[0]
            rows_seen += inputs.shape[0]
        keeper.after(epoch, total / rows_seen, score_fn)
    history, best_epoch = keeper.finish()
    return score_fn, history, best_epoch
