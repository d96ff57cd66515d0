"""Variants of the linear denoising autoencoder (DLAE, configs/recommender-linear-dae), in NumPy,
as rows of bench_quality.py, each tried for the aim of recall 3% above EASE (docs/quality.md):

  dlae            the config's closed form (p 0.4, lambda 0.27 per training user):
                  B = I - P diag(L), P = (G + diag(L))^-1, L_i = p/(1-p) G_ii + lambda N;
  dlae-tuned      the same, p and lambda chosen per fold on the validation users from a 5 x 5
                  grid around the config's values;
  rdlae           the relaxed diagonal of Moon, Kim and Lee (SIGIR 2023): diag(B) <= xi, which
                  adds mu_i = max(0, (1 - xi) / P_ii - L_i) to L_i (xi 0 is the EDLAE, xi 1 the
                  DLAE); xi chosen on the validation users;
  dlae-popularity the DLAE's scores divided by (count + 1)^beta, a popularity penalty on the
                  ranking, beta chosen on the validation users (0 keeps the DLAE);
  dlae-user-knn   the DLAE's scores blended with a user-based neighbourhood model (cosine
                  similarity to the k most similar training users, their items summed), each
                  user's scores standardised, the weight and k chosen on the validation users.
"""
import itertools

import numpy as np

from higher_order_peer import spd_inverse  # float32 Cholesky inverse of an SPD matrix

CONFIG_P, CONFIG_LAMBDA = 0.4, 0.27


class Gram:
    """X^T X of a fold's training users, factorised once per (p, lambda)."""

    def __init__(self, x):
        self.n = x.shape[0]
        self.g = (x.T @ x).toarray().astype(np.float32)
        self.counts = np.diag(self.g).copy()

    def solve(self, p, lam):
        """(P, L): P = (G + diag(L))^-1 with the DLAE's penalties L."""
        penalty = (p / (1 - p) * self.counts + lam * self.n).astype(np.float32)
        a = self.g.copy()
        a[np.diag_indices_from(a)] += penalty
        return spd_inverse(a), penalty


def dlae_matrix(inverse, penalty, extra=None):
    total = penalty if extra is None else penalty + extra
    b = -inverse * total[None, :]
    b[np.diag_indices_from(b)] += 1.0
    return b


def pick(fold, settings, log, name, candidates, score_of):
    """The candidate whose validation scores do best; candidates: [(label, payload)]."""
    best = None
    for label, payload in candidates:
        value = fold.metrics("val", fold.recs("val", score_of(payload, fold.x_val)))
        value = value[settings["select"]]
        log(f"    {name} {label}: validation {settings['select']} {value:.4f}")
        if best is None or value > best[0]:
            best = (value, label, payload)
    return best[1], best[2]


def dlae(fold, log, settings):
    inverse, penalty = Gram(fold.x_train).solve(CONFIG_P, CONFIG_LAMBDA)
    return fold.recs("test", fold.x_test @ dlae_matrix(inverse, penalty)), {}


def dlae_tuned(fold, log, settings):
    gram = Gram(fold.x_train)
    grid = itertools.product((0.25, 0.33, 0.4, 0.5, 0.6), (0.1, 0.2, 0.27, 0.4, 0.6))
    candidates = ((f"p {p:g} lambda {lam:g}", dlae_matrix(*gram.solve(p, lam)))
                  for p, lam in grid)
    label, b = pick(fold, settings, log, "dlae-tuned", candidates, lambda b, x: x @ b)
    return fold.recs("test", fold.x_test @ b), {"chosen": label}


def rdlae(fold, log, settings):
    inverse, penalty = Gram(fold.x_train).solve(CONFIG_P, CONFIG_LAMBDA)
    diag = np.diag(inverse)

    def matrix(xi):
        b = dlae_matrix(inverse, penalty, np.maximum(0.0, (1 - xi) / diag - penalty))
        b[np.diag_indices_from(b)] = 0.0  # an input item is never recommended back
        return b

    candidates = ((f"xi {xi:g}", matrix(xi)) for xi in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0))
    label, b = pick(fold, settings, log, "rdlae", candidates, lambda b, x: x @ b)
    return fold.recs("test", fold.x_test @ b), {"chosen": label}


def dlae_popularity(fold, log, settings):
    gram = Gram(fold.x_train)
    b = dlae_matrix(*gram.solve(CONFIG_P, CONFIG_LAMBDA))
    counts = gram.counts + 1.0
    candidates = ((f"beta {beta:g}", counts ** -beta) for beta in (0, 0.05, 0.1, 0.2, 0.3, 0.5))
    label, scale = pick(fold, settings, log, "dlae-popularity", candidates,
                        lambda s, x: np.asarray(x @ b) * s[None, :])
    return fold.recs("test", np.asarray(fold.x_test @ b) * scale[None, :]), {"chosen": label}


def standardised(scores):
    scores = np.asarray(scores, dtype=np.float32)
    return (scores - scores.mean(1, keepdims=True)) / (scores.std(1, keepdims=True) + 1e-9)


def user_knn_scores(x_train_dense, x, k):
    """Sum of the items of the k training users most cosine-similar to each row of x."""
    x = x.toarray().astype(np.float32)
    unit = x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-9)
    train_unit = x_train_dense / (np.linalg.norm(x_train_dense, axis=1, keepdims=True) + 1e-9)
    similarity = unit @ train_unit.T
    k = min(k, similarity.shape[1])
    if k < similarity.shape[1]:
        rest = np.argpartition(-similarity, k, axis=1)[:, k:]
        np.put_along_axis(similarity, rest, 0.0, axis=1)
    return similarity @ x_train_dense


def dlae_user_knn(fold, log, settings):
    b = dlae_matrix(*Gram(fold.x_train).solve(CONFIG_P, CONFIG_LAMBDA))
    dense = fold.x_train.toarray().astype(np.float32)

    def mixed(choice, x):
        k, w = choice
        return (1 - w) * standardised(x @ b) + w * standardised(user_knn_scores(dense, x, k))

    candidates = ((f"k {k} w {w:g}", (k, w))
                  for k in (50, 100) for w in (0.0, 0.1, 0.2, 0.3, 0.4))
    label, choice = pick(fold, settings, log, "dlae-user-knn", candidates, mixed)
    return fold.recs("test", mixed(choice, fold.x_test)), {"chosen": label}


METHODS = {"dlae": dlae, "dlae-tuned": dlae_tuned, "rdlae": rdlae,
           "dlae-popularity": dlae_popularity, "dlae-user-knn": dlae_user_knn}
