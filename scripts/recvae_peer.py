#!/usr/bin/python3
"""PyTorch RecVAE (Shenbin, Alekseev, Tutubalina, Malykh, Nikolenko, "RecVAE: a New Variational
Autoencoder for Top-N Recommendations with Implicit Feedback", WSDM 2020), a peer row of
scripts/bench_quality.py (`--methods recvae-torch`), written from the paper.

What it changes against Mult-VAE (multvae_peer.py):
  encoder  the L2-normalised input with half its entries dropped goes through 5 layers of 600
           units, each swish(W h_prev + the sum of the earlier layers' outputs) then a layer
           norm (epsilon 0.1), then a linear mean and log-variance of a 200-wide code;
  decoder  one linear layer from the code to the catalog, softmax, the multinomial likelihood;
  prior    "composite": per code dimension a mixture of N(0, 1) (weight 3/20), the posterior of
           the same user under the encoder as it was at the end of the previous epoch
           (weight 3/4) and N(0, e^10) (weight 1/10); the KL term is the one-sample estimate
           log q(z|x) - log p(z|x);
  beta     the KL term of each user is weighted by gamma times the user's item count
           (gamma 0.005), not annealed;
  training alternating: each epoch 3 passes updating the encoder only (dropout 0.5), then one
           pass updating the decoder only (no dropout), each with its own Adam (lr 5e-4);
           minibatch 500.
Prediction takes the code's mean. The epoch kept is the one with the best validation metric.
"""

import math
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see movielens_peer.py

import numpy as np  # noqa: E402
import torch  # noqa: E402

from multvae_peer import BestEpoch, to_tensor  # noqa: E402  (the validation loop; CSR -> tensor)

PAPER = {"hidden": 600, "latent": 200, "gamma": 0.005, "lr": 5e-4, "batch": 500, "epochs": 50,
         "encoder_passes": 3, "decoder_passes": 1, "dropout": 0.5}
PRIOR_WEIGHTS = (3 / 20, 3 / 4, 1 / 10)
WIDE_LOGVAR = 10.0
LAYERS = 5


def log_normal(z, mu, logvar):
    """log N(z; mu, exp(logvar)), per entry."""
    return -0.5 * (logvar + math.log(2 * math.pi) + (z - mu) ** 2 / torch.exp(logvar))


class Encoder(torch.nn.Module):
    def __init__(self, n_items, hidden, latent):
        super().__init__()
        dims = [n_items] + [hidden] * LAYERS
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(hidden, eps=0.1)
                                         for _ in range(LAYERS))
        self.mu = torch.nn.Linear(hidden, latent)
        self.logvar = torch.nn.Linear(hidden, latent)

    def forward(self, x, dropout):
        h = torch.nn.functional.normalize(x, dim=1)
        h = torch.nn.functional.dropout(h, p=dropout, training=dropout > 0)
        earlier = None  # the sum of the earlier layers' outputs
        for layer, norm in zip(self.layers, self.norms):
            pre = layer(h) if earlier is None else layer(h) + earlier
            h = norm(pre * torch.sigmoid(pre))  # swish, then layer norm
            earlier = h if earlier is None else earlier + h
        return self.mu(h), self.logvar(h)


class RecVAE(torch.nn.Module):
    def __init__(self, n_items, hidden, latent):
        super().__init__()
        self.encoder = Encoder(n_items, hidden, latent)
        self.old_encoder = Encoder(n_items, hidden, latent)  # the prior's copy
        self.old_encoder.requires_grad_(False)
        self.decoder = torch.nn.Linear(latent, n_items)
        self.update_prior()

    def update_prior(self):
        self.old_encoder.load_state_dict(self.encoder.state_dict())

    def log_prior(self, x, z):
        with torch.no_grad():
            old_mu, old_logvar = self.old_encoder(x, 0.0)
        parts = torch.stack([
            math.log(PRIOR_WEIGHTS[0]) + log_normal(z, torch.zeros_like(z), torch.zeros_like(z)),
            math.log(PRIOR_WEIGHTS[1]) + log_normal(z, old_mu, old_logvar),
            math.log(PRIOR_WEIGHTS[2]) + log_normal(z, torch.zeros_like(z),
                                                    torch.full_like(z, WIDE_LOGVAR))])
        return torch.logsumexp(parts, dim=0)

    def loss(self, x, dropout, gamma):
        mu, logvar = self.encoder(x, dropout)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        likelihood = (torch.log_softmax(self.decoder(z), dim=1) * x).sum(dim=1)
        kl = (log_normal(z, mu, logvar) - self.log_prior(x, z)).sum(dim=1)
        return -(likelihood - gamma * x.sum(dim=1) * kl).mean()

    def scores(self, x):
        mu, _ = self.encoder(x, 0.0)
        return self.decoder(mu)


def train(x_train, settings, validate=None, seed=98765, log=None):
    """Trains on the CSR matrix x_train. `validate(score_fn) -> metric` (higher is better) is
    called after every settings['eval_every'] epochs; the best epoch's weights are kept.
    Returns (score_fn, history [(epoch, metric)], best epoch)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    n, n_items = x_train.shape
    model = RecVAE(n_items, settings["hidden"], settings["latent"])
    encoder_opt = torch.optim.Adam(model.encoder.parameters(), lr=settings["lr"])
    decoder_opt = torch.optim.Adam(model.decoder.parameters(), lr=settings["lr"])
    keeper = BestEpoch(model, settings, validate, log, "recvae")

    def score_fn(rows):
        model.eval()
        with torch.no_grad():
            out = [model.scores(to_tensor(rows[s:s + 2000])).numpy()
                   for s in range(0, rows.shape[0], 2000)]
        return np.concatenate(out) if out else np.zeros((0, n_items), np.float32)

    def passes(optimizer, count, dropout):
        total = 0.0
        for _ in range(count):
            order = rng.permutation(n)
            for start in range(0, n, settings["batch"]):
                x = to_tensor(x_train[order[start:start + settings["batch"]]])
                loss = model.loss(x, dropout, settings["gamma"])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item() * x.shape[0]
        return total / max(1, n * count)

    for epoch in range(1, settings["epochs"] + 1):
        model.train()
        passes(encoder_opt, settings["encoder_passes"], settings["dropout"])
        loss = passes(decoder_opt, settings["decoder_passes"], 0.0)
        model.update_prior()
        keeper.after(epoch, loss, score_fn)
    history, best_epoch = keeper.finish()
    return score_fn, history, best_epoch
