"""The higher-order linear model of Steck and Liang ("Negative interactions for improved
collaborative filtering: don't go deeper, go higher", RecSys 2021), in NumPy, as a row of
bench_quality.py: scores = X B + Z C, where X holds the user's items, Z the user's pairs among
P selected item pairs (z_(i,j) = x_i x_j, the pairs that co-occur most in training), B an item x
item matrix and C a pair x item matrix.

Trained by alternating two exact ridge solves (the paper uses ADMM on the same objective):
  B given C: the linear denoising autoencoder's closed form (nn-train's LeastSquares solver, the
             config recommender-linear-dae: penalty p/(1-p) G_ii + lambda_B on item i's row) on
             the residual target X - Z C;
  C given B: a ridge regression of the residual X - X B on Z with the penalty lambda_C, each
             pair's weights to its own two items held at 0 (otherwise a pair would predict the
             items it is made of), by the Lagrangian of those equality constraints.
Three alternations from C = 0; lambda_C and P are chosen on the validation users.
"""
import numpy as np
import scipy.linalg
import scipy.sparse as sp


def select_pairs(x, count):
    """The `count` item pairs (i < j) that co-occur in the most training users, at least 2."""
    g = (x.T @ x).tocoo()
    keep = (g.row < g.col) & (g.data >= 2)
    rows, cols, data = g.row[keep], g.col[keep], g.data[keep]
    order = np.argsort(-data, kind="stable")[:count]
    return rows[order], cols[order]


def pair_matrix(x, first, second):
    """Users x pairs: 1 where the user has both items of the pair."""
    x = sp.csc_matrix(x)
    return sp.csr_matrix(x[:, first].multiply(x[:, second]))


def spd_inverse(a):
    c, info = scipy.linalg.lapack.spotrf(a.astype(np.float32), lower=1, overwrite_a=1)
    if info == 0:
        c, info = scipy.linalg.lapack.spotri(c, lower=1, overwrite_c=1)
    if info != 0:
        raise ArithmeticError(f"Cholesky factorisation failed (LAPACK info {info}): the matrix "
                              "is not positive definite")
    return np.tril(c) + np.tril(c, -1).T


def dlae_weights(x, target, p, lam_b):
    """argmin ||target - X B||^2 + sum_i (p/(1-p) G_ii + lam_b) ||B_i||^2 (the DLAE's penalty)."""
    gram = (x.T @ x).toarray().astype(np.float32)
    d = np.diag(gram).copy()
    gram[np.diag_indices_from(gram)] += p / (1 - p) * d + lam_b
    inv = spd_inverse(gram)
    return inv @ np.asarray(x.T @ target, dtype=np.float32)


def pair_weights(z, residual, first, second, lam_c, n_items):
    """argmin ||residual - Z C||^2 + lam_c ||C||^2 with C[p, first[p]] = C[p, second[p]] = 0."""
    gram = (z.T @ z).toarray().astype(np.float32)
    gram[np.diag_indices_from(gram)] += lam_c
    q = spd_inverse(gram)
    c = q @ np.asarray(z.T @ residual, dtype=np.float32)
    # For item column i, the pairs holding i must have weight 0: subtract
    # Q[:, S] Q[S, S]^-1 c[S, i] (the equality-constrained least squares).
    holding = [[] for _ in range(n_items)]
    for p, (i, j) in enumerate(zip(first, second)):
        holding[i].append(p)
        holding[j].append(p)
    for i, s in enumerate(holding):
        if not s:
            continue
        s = np.array(s)
        correction = np.linalg.solve(q[np.ix_(s, s)], c[s, i])
        c[:, i] -= q[:, s] @ correction
        c[s, i] = 0.0
    return c


def fit(x, first, second, p, lam_b, lam_c, rounds=3):
    n = x.shape[1]
    xd = x.toarray().astype(np.float32)
    z = pair_matrix(x, first, second)
    c = np.zeros((len(first), n), np.float32)
    b = None
    for _ in range(rounds):
        b = dlae_weights(x, xd - np.asarray(z @ c), p, lam_b)
        c = pair_weights(z, xd - np.asarray(x @ b), first, second, lam_c, n)
    return b, c


def scores(x, b, c, first, second):
    return np.asarray(x @ b) + np.asarray(pair_matrix(x, first, second) @ c)


def higher_order(fold, log, settings):
    """A bench_quality row: B's penalties are recommender-linear-dae's (p 0.4, lambda 0.27 per
    training user); lambda_C and P from the validation users."""
    x = fold.x_train
    p, lam_b = 0.4, 0.27 * x.shape[0]
    best = None
    for count in settings.get("ho_pairs", (1000, 4000)):
        first, second = select_pairs(x, count)
        for lam_c in settings.get("ho_lambdas", (10.0, 100.0, 1000.0)):
            b, c = fit(x, first, second, p, lam_b, lam_c)
            score = fold.metrics("val", fold.recs("val", scores(fold.x_val, b, c, first, second)))
            score = score[settings["select"]]
            log(f"    higher-order pairs {len(first)} lambda_C {lam_c:g}: validation "
                f"{settings['select']} {score:.4f}")
            if best is None or score > best[0]:
                best = (score, count, lam_c, b, c, first, second)
    _, count, lam_c, b, c, first, second = best
    return (fold.recs("test", scores(fold.x_test, b, c, first, second)),
            {"pairs": int(len(first)), "lambda_c": lam_c})
