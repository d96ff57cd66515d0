#!/usr/bin/python3
"""PyTorch Mult-DAE and Mult-VAE as published (Liang, Krishnan, Hoffman, Jebara, "Variational
Autoencoders for Collaborative Filtering", WWW 2018, and the authors' code vae_cf), the peers of
this suite's networks in scripts/bench_quality.py.

Both read a user's items x (an indicator row), L2-normalise it, drop each entry with probability
0.5 during training (inverted dropout: survivors scaled by 2), and go through tanh layers to a
linear output whose softmax is the distribution over items; the loss is the multinomial
log-likelihood -sum_i x_i log softmax(z)_i of the raw (not normalised) row, averaged over the
minibatch.
  Mult-DAE: [I -> 600 -> 200 -> 600 -> I], tanh on every hidden layer, L2 weight decay
            2 * lam/2 * |W|^2 with lam = 0.01 / batch (the paper's notebook).
  Mult-VAE: encoder [I -> 600 -> 2 x 200] (tanh, then mean and log-variance), z = mean + eps *
            exp(logvar / 2) in training and the mean otherwise, decoder [200 -> 600 -> I];
            loss + beta * KL(q(z|x) || N(0, I)) with beta = min(cap, updates / anneal_steps),
            cap 0.2 (the paper's best), no weight decay.
Weights: Glorot uniform; biases N(0, 0.001^2) (truncated in the paper); Adam lr 1e-3,
minibatch 500. The epoch kept is the one with the best validation NDCG@100 (the paper's rule),
unless `select` says otherwise.
"""

import math
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see movielens_peer.py

import numpy as np  # noqa: E402
import torch  # noqa: E402

PAPER = {"hidden": [600, 200], "dropout": 0.5, "batch": 500, "lr": 1e-3, "epochs": 200,
         "anneal_cap": 0.2, "anneal_steps": 200000, "lam": 0.01}


class MultDAE(torch.nn.Module):
    """[I -> hidden... -> mirrored ... -> I], tanh between."""

    def __init__(self, n_items, hidden, dropout):
        super().__init__()
        dims = [n_items] + list(hidden) + list(reversed(hidden[:-1])) + [n_items]
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.drop = torch.nn.Dropout(dropout)
        init_layers(self.layers)

    def forward(self, x):
        h = self.drop(torch.nn.functional.normalize(x, dim=1))
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < len(self.layers) - 1:
                h = torch.tanh(h)
        return h, None


class MultVAE(torch.nn.Module):
    """Encoder [I -> hidden[:-1] -> 2 x hidden[-1]], decoder mirrored; tanh between."""

    def __init__(self, n_items, hidden, dropout):
        super().__init__()
        q = [n_items] + list(hidden)
        p = list(reversed(hidden)) + [n_items]
        self.latent = hidden[-1]
        self.q_layers = torch.nn.ModuleList(
            torch.nn.Linear(a, 2 * b if i == len(q) - 2 else b)
            for i, (a, b) in enumerate(zip(q[:-1], q[1:])))
        self.p_layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(p[:-1], p[1:]))
        self.drop = torch.nn.Dropout(dropout)
        init_layers(self.q_layers)
        init_layers(self.p_layers)

    def forward(self, x):
        h = self.drop(torch.nn.functional.normalize(x, dim=1))
        for i, layer in enumerate(self.q_layers):
            h = layer(h)
            if i < len(self.q_layers) - 1:
                h = torch.tanh(h)
        mu, logvar = h[:, :self.latent], h[:, self.latent:]
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        for i, layer in enumerate(self.p_layers):
            z = layer(z)
            if i < len(self.p_layers) - 1:
                z = torch.tanh(z)
        kl = (0.5 * (-logvar + torch.exp(logvar) + mu * mu - 1.0)).sum(dim=1).mean()
        return z, kl


def init_layers(layers):
    for layer in layers:
        torch.nn.init.xavier_uniform_(layer.weight)
        torch.nn.init.normal_(layer.bias, std=0.001)


def to_tensor(rows):
    """scipy CSR -> dense float32 tensor (the matrices of MovieLens-sized sets fit)."""
    return torch.from_numpy(np.asarray(rows.todense(), dtype=np.float32))


class BestEpoch:
    """The validation side of a peer's training loop: after(epoch, ...) validates every
    settings['eval_every'] epochs (and after the last), logs the epoch, and keeps a copy of the
    weights of the best metric so far (higher is better); finish() puts those weights back and
    returns (history [(epoch, metric)], best epoch)."""

    def __init__(self, model, settings, validate, log, name):
        self.model, self.validate, self.log, self.name = model, validate, log, name
        self.every, self.last = settings.get("eval_every", 1), settings["epochs"]
        self.best = (-math.inf, 0, None)
        self.history = []

    def after(self, epoch, loss, score_fn):
        if not self.validate or (epoch % self.every != 0 and epoch != self.last):
            return
        metric = self.validate(score_fn)
        self.history.append((epoch, metric))
        if self.log:
            self.log(f"    {self.name} epoch {epoch}: loss {loss:.3f}, validation {metric:.4f}")
        if metric > self.best[0]:
            weights = {k: v.clone() for k, v in self.model.state_dict().items()}
            self.best = (metric, epoch, weights)

    def finish(self):
        if self.best[2] is not None:
            self.model.load_state_dict(self.best[2])
        return self.history, self.best[1]


def train(kind, x_train, settings, validate=None, seed=98765, log=None):
    """Trains on the CSR matrix x_train. `validate(score_fn) -> metric` (higher is better) is
    called after every settings['eval_every'] epochs; the best epoch's weights are kept.
    Returns (score_fn, history [(epoch, metric)], best epoch)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n_items = x_train.shape[1]
    model = (MultVAE if kind == "vae" else MultDAE)(n_items, settings["hidden"],
                                                    settings["dropout"])
    decay = settings.get("lam", 0.0) / settings["batch"] if kind == "dae" else 0.0
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    optimizer = torch.optim.Adam([{"params": weights}, {"params": biases}], lr=settings["lr"])
    n = x_train.shape[0]
    updates = 0
    keeper = BestEpoch(model, settings, validate, log, kind)

    def score_fn(rows):
        model.eval()
        with torch.no_grad():
            out = []
            for start in range(0, rows.shape[0], 2000):
                logits, _ = model(to_tensor(rows[start:start + 2000]))
                out.append(logits.numpy())
            return np.concatenate(out) if out else np.zeros((0, n_items), np.float32)

    for epoch in range(1, settings["epochs"] + 1):
        model.train()
        order = rng.permutation(n)
        total = 0.0
        for start in range(0, n, settings["batch"]):
            x = to_tensor(x_train[order[start:start + settings["batch"]]])
            logits, kl = model(x)
            loss = -(torch.log_softmax(logits, dim=1) * x).sum(dim=1).mean()
            if kind == "vae":
                beta = min(settings["anneal_cap"], updates / settings["anneal_steps"])
                loss = loss + beta * kl
            if decay:
                # tf.contrib l2_regularizer(lam)(W) = lam * |W|^2 / 2, added twice in the paper.
                loss = loss + decay * sum((w * w).sum() for w in weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            updates += 1
            total += loss.item() * x.shape[0]
        keeper.after(epoch, total / n, score_fn)
    history, best_epoch = keeper.finish()
    return score_fn, history, best_epoch
