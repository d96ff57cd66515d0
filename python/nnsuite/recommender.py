"""nnsuite.Recommender: from an interactions table to top-K item ids, in the manner of
scikit-learn and implicit (fit / recommend / evaluate / save / load).

It runs the same steps as the command-line tools, through the library: the rows become NetCDF
datasets as `nn-generate --rows` makes them, a shipped config (configs/<name>) or your own
trains as `nn-train train.cdl` trains it, and the network file carries its items, so
`nn-serve -n <dir>/network.nc` and `nn-export` use a saved Recommender with no other file.
Given the same rows in the same order, a Recommender's recommendations are those of
samples/movielens/run.sh. See docs/python.md, "From a ratings table to serving".
"""

import difflib
import json
import math
import os
import random
import shutil
import sys
import tempfile

import numpy as np

from . import _core
from ._configs import config_dir

# TrainingParameters keys that a keyword may set, by their CDL names (docs/config-reference.md).
# The keys that name files are the Recommender's own (its work folder), so they are not here.
TRAINING_KEYS = [
    "Epochs", "MiniBatch", "Alpha", "Lambda", "Lambda1", "Mu", "Mu1", "AlphaInterval",
    "AlphaMultiplier", "Optimizer", "ShuffleIndices", "ValidationInterval", "ValidationK",
    "ValidationRankInputItems", "Patience", "KeepBest", "Solver", "FitBias", "ZeroDiagonal",
    "SparseUpdate",
    "Profile", "TraceSteps", "TensorBoardInterval", "CheckpointInterval", "CheckpointsKept",
]
# Python spellings of the same keys (nn-train's flags, Trainer's arguments), and the top-level
# RandomSeed.
ALIASES = {
    "epochs": "Epochs", "minibatch": "MiniBatch", "batch": "MiniBatch", "batch_size": "MiniBatch",
    "alpha": "Alpha", "learning_rate": "Alpha", "lambda_": "Lambda", "lambda": "Lambda",
    "weight_decay": "Lambda", "lambda1": "Lambda1", "mu": "Mu", "mu1": "Mu1",
    "alpha_interval": "AlphaInterval", "alpha_multiplier": "AlphaMultiplier",
    "optimizer": "Optimizer", "shuffle": "ShuffleIndices", "validation_interval":
    "ValidationInterval", "validation_k": "ValidationK", "patience": "Patience",
    "keep_best": "KeepBest", "solver": "Solver", "fit_bias": "FitBias",
    "zero_diagonal": "ZeroDiagonal",
    "sparse_update": "SparseUpdate", "profile": "Profile", "trace_steps": "TraceSteps",
    "tensorboard_interval": "TensorBoardInterval", "checkpoint_interval": "CheckpointInterval",
    "checkpoints_kept": "CheckpointsKept", "seed": "RandomSeed", "random_seed": "RandomSeed",
}
STATE_FILE = "recommender.json"


def _training_key(name):
    """The CDL key a keyword names; ValueError naming the nearest valid one otherwise."""
    if name in ALIASES:
        return ALIASES[name]
    for key in TRAINING_KEYS + ["RandomSeed"]:
        if key.lower() == name.lower():
            return key
    choices = sorted(set(ALIASES) | set(TRAINING_KEYS))
    near = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise ValueError(f"{name}: not a training setting{hint}; settings are the CDL "
                     f"TrainingParameters keys or their Python names: {', '.join(choices)}")


def _id_text(value, what):
    text = str(value)
    if not text or any(c in text for c in ",\t\n\r"):
        raise ValueError(f"{what} {value!r}: an id may not be empty or hold a comma, TAB or "
                         "line break (ids become the lines of a rows file)")
    return text


def _encode(ids, what):
    """The ids as (a code per row, the distinct ids' texts, the distinct ids), codes indexing
    both lists; each distinct id's text is checked once. Whole arrays at a time: a Python loop
    over 20 million rows would take a minute."""
    arr = np.asarray(ids)
    try:
        distinct, codes = np.unique(arr, return_inverse=True)
    except TypeError:  # ids of mixed types: by their text
        arr = np.array([str(v) for v in arr.tolist()])
        distinct, codes = np.unique(arr, return_inverse=True)
    values = distinct.tolist()
    texts = [str(v) for v in values]
    if arr.dtype.kind not in "iu":  # digits need no check
        for t in texts:
            _id_text(t, what)
    return codes, texts, values


def _pairs(data, user_col, item_col, rating_col, min_rating, user_ids, item_ids, what):
    """(users, items) as two equal-length sequences from a DataFrame, a scipy sparse matrix
    (rows users, columns items) or a pair of arrays."""
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # pandas DataFrame
        for col in (user_col, item_col) + ((rating_col,) if rating_col else ()):
            if col not in data.columns:
                raise ValueError(f"{what}: no column {col!r}; columns are "
                                 f"{', '.join(map(str, data.columns))}")
        keep = slice(None)
        if rating_col is not None:
            if min_rating is None:
                raise ValueError(f"{what}: rating_col={rating_col!r} needs min_rating: the "
                                 "recommender learns from implicit feedback, and the rows rated "
                                 "min_rating or higher are its interactions")
            keep = np.asarray(data[rating_col]) >= min_rating
        users = np.asarray(data[user_col])[keep]
        items = np.asarray(data[item_col])[keep]
        return users, items
    if rating_col is not None or min_rating is not None:
        raise ValueError(f"{what}: rating_col and min_rating apply to a DataFrame")
    if hasattr(data, "tocsr") and hasattr(data, "shape"):  # scipy.sparse
        m = data.tocsr()
        rows, cols = m.shape
        uid = np.arange(rows) if user_ids is None else np.asarray(user_ids)
        iid = np.arange(cols) if item_ids is None else np.asarray(item_ids)
        if len(uid) != rows or len(iid) != cols:
            raise ValueError(f"{what}: user_ids has {len(uid)} ids and item_ids {len(iid)} for "
                             f"a {rows} x {cols} matrix")
        m = m.copy()
        m.eliminate_zeros()
        r = np.repeat(np.arange(rows), np.diff(m.indptr))
        return uid[r], iid[m.indices]
    if isinstance(data, tuple) and len(data) == 2:
        users, items = np.asarray(data[0]), np.asarray(data[1])
        if users.shape != items.shape or users.ndim != 1:
            raise ValueError(f"{what}: expected two 1-D arrays of equal length (users, items); "
                             f"got shapes {users.shape} and {items.shape}")
        return users, items
    raise TypeError(f"{what}: expected a pandas DataFrame, a scipy.sparse matrix (with user_ids "
                    f"and item_ids) or a tuple (users, items); got {type(data).__name__}")


def _read_index(path):
    """A 'label<TAB>index' file as a list of labels by index."""
    labels = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            label, _, index = line.rstrip("\n").rpartition("\t")
            labels[int(index)] = label
    return [labels[i] for i in range(len(labels))]


def _id_type(ids):
    return "int" if np.asarray(ids).dtype.kind in "iu" else "str"


class Recommender:
    """A recommender trained from (user, item) interactions by a network config.

    config: a name from configs/ ("recommender-linear-dae", the closed-form denoising linear
      autoencoder and run.sh's default; "recommender-autoencoder"; "recommender-mult-dae"; ...)
      or a folder holding network.json and train.cdl.
    work_dir: where the datasets, command files and network are written (default: a new
      temporary folder, removed with the Recommender unless saved elsewhere first).
    threads: CPU threads (0: all). verbose: print nn-train's progress lines to stderr.
    **settings: any training setting of the config's train.cdl, by its CDL name (Epochs,
      Alpha, Lambda, ...) or its Python name (epochs, alpha, lambda_, minibatch, seed, ...);
      an unknown name is refused with the nearest valid one.
    """

    def __init__(self, config="recommender-linear-dae", *, work_dir=None, threads=0,
                 verbose=True, **settings):
        self.config = config
        self._config_dir = config_dir(config)
        self.settings = {_training_key(k): v for k, v in settings.items()}
        self.threads = threads
        self.verbose = verbose
        self._own_dir = work_dir is None
        self.work_dir = tempfile.mkdtemp(prefix="nnsuite-") if work_dir is None else \
            os.path.abspath(os.fspath(work_dir))
        os.makedirs(self.work_dir, exist_ok=True)
        self.model = None
        self.validation_users = []

    def __del__(self):
        if getattr(self, "_own_dir", False) and os.path.isdir(self.work_dir):
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __repr__(self):
        state = "fitted" if self.model is not None else "not fitted"
        return f"<Recommender config={self.config!r} {state}, work_dir={self.work_dir!r}>"

    # ---- fitting -------------------------------------------------------------------------------
    def fit(self, data, user_col="userId", item_col="movieId", rating_col=None,
            min_rating=None, validation=None, patience=None, k=10, user_ids=None,
            item_ids=None, seed=1):
        """Trains on interactions; returns self.

        data: a pandas DataFrame (columns user_col and item_col; with rating_col, only the
          rows rated min_rating or higher), a scipy.sparse matrix of users x items (user_ids,
          item_ids name its rows and columns; default 0..n-1), or a tuple (users, items).
          Rows are taken in their order, as nn-generate --rows takes a CSV's lines.
        validation: None, or a share of the users (0 < v < 1) held out of training: each one's
          items are split at random into 80% input and 20% targets, and the network is scored by
          recall@k on them as nn-train --validation scores it (the run keeps the best evaluated
          network, KeepBest). Held-out users are not trained on, and items only they have are
          unknown to the network. patience: stop after this many evaluations without a better
          recall@k (nn-train's Patience); needs validation. seed: the validation draw.
        """
        users, items = _pairs(data, user_col, item_col, rating_col, min_rating, user_ids,
                              item_ids, "data")
        if len(users) == 0:
            raise ValueError("data: no interactions")
        if patience is not None and validation is None:
            raise ValueError("patience: needs validation (a share of the users to score)")
        if validation is not None and not 0 < validation < 1:
            raise ValueError(f"validation: expected a share of the users in (0, 1); got "
                             f"{validation!r}")
        self._user_type, self._item_type = _id_type(users), _id_type(items)
        user_codes, user_texts, user_values = _encode(users, "user")
        item_codes, item_texts, item_values = _encode(items, "item")
        self._user_ids = dict(zip(user_texts, user_values))
        self._item_ids = dict(zip(item_texts, item_values))
        held = self._pick_validation(user_codes, user_texts, validation, seed)
        code_of = {t: c for c, t in enumerate(user_texts)}
        trained = ~np.isin(user_codes, [code_of[u] for u in held])
        if not trained.any():
            raise ValueError("validation: no users left to train on")
        user_text = np.array(user_texts, dtype=object)[user_codes]
        item_text = np.array(item_texts, dtype=object)[item_codes]
        w = self.work_dir
        for name in ("features.idx", "samples.idx", "validation_samples.idx"):
            if os.path.exists(os.path.join(w, name)):
                os.remove(os.path.join(w, name))
        self._write_rows("ratings.csv", user_text[trained], item_text[trained])
        common = dict(features=os.path.join(w, "features.idx"),
                      samples=os.path.join(w, "samples.idx"), rows=True)
        _core.generate(os.path.join(w, "ratings.csv"), os.path.join(w, "input.nc"), "input",
                       create_features=True, **common)
        _core.generate(os.path.join(w, "ratings.csv"), os.path.join(w, "output.nc"), "output",
                       **common)
        cdl = self._train_cdl()
        params = cdl["TrainingParameters"]
        if held:
            self._write_validation(user_text[~trained], item_text[~trained], held, seed)
            params["ValidationData"] = ["validation_input.nc", "validation_output.nc"]
            params.setdefault("ValidationK", k)
            if patience is not None:
                params["Patience"] = patience
        path = os.path.join(w, "train.cdl")
        with open(path, "w") as f:
            json.dump(cdl, f, indent=2)
        log = (lambda line: print(line, file=sys.stderr)) if self.verbose else None
        _core.train(path, threads=self.threads, log=log)
        self.validation_users = [self._user_ids[u] for u in sorted(held)]
        self._load_state()
        return self

    def _pick_validation(self, user_codes, user_texts, share, seed):
        if share is None:
            return set()
        rows = np.bincount(user_codes, minlength=len(user_texts))
        eligible = sorted(t for t, n in zip(user_texts, rows.tolist()) if n >= 2)
        take = int(round(share * len(user_texts)))
        if take < 1 or take > len(eligible):
            raise ValueError(f"validation: {share} of {len(user_texts)} users is {take}; "
                             f"{len(eligible)} users have the 2 items a validation user needs")
        return set(random.Random(seed).sample(eligible, take))

    def _write_rows(self, name, users, items):
        users = users.tolist() if hasattr(users, "tolist") else users
        items = items.tolist() if hasattr(items, "tolist") else items
        with open(os.path.join(self.work_dir, name), "w", encoding="utf-8") as f:
            if users:
                f.write("\n".join(map(",".join, zip(users, items))) + "\n")

    def _write_validation(self, user_text, item_text, held, seed):
        items_of = {}
        for u, i in zip(user_text.tolist(), item_text.tolist()):
            items_of.setdefault(u, []).append(i)
        rng = random.Random(seed + 1)
        inputs, targets = [], []
        for u in sorted(held):
            its = list(dict.fromkeys(items_of[u]))
            if len(its) < 2:  # a user whose rows repeat one item: nothing to hold out
                continue
            rng.shuffle(its)
            n_target = max(1, int(round(0.2 * len(its))))
            inputs += [(u, i) for i in its[n_target:]]
            targets += [(u, i) for i in its[:n_target]]
        w = self.work_dir
        self._write_rows("validation_input.csv", [u for u, _ in inputs], [i for _, i in inputs])
        self._write_rows("validation_target.csv", [u for u, _ in targets],
                         [i for _, i in targets])
        common = dict(features=os.path.join(w, "features.idx"),
                      samples=os.path.join(w, "validation_samples.idx"), rows=True)
        _core.generate(os.path.join(w, "validation_input.csv"),
                       os.path.join(w, "validation_input.nc"), "input", **common)
        _core.generate(os.path.join(w, "validation_target.csv"),
                       os.path.join(w, "validation_output.nc"), "output", **common)

    def _train_cdl(self):
        with open(os.path.join(self._config_dir, "train.cdl"), encoding="utf-8") as f:
            cdl = json.load(f)
        cdl["Network"] = os.path.join(self._config_dir, "network.json")
        cdl["Data"] = ["input.nc", "output.nc"]
        params = cdl.setdefault("TrainingParameters", {})
        for key in ("CheckpointName", "ValidationData", "WarmStart", "TensorBoard", "Trace",
                    "Resume"):
            params.pop(key, None)
        params["CheckpointInterval"] = 0
        params["Results"] = "network.nc"
        for key, value in self.settings.items():
            if key == "RandomSeed":
                cdl["RandomSeed"] = value
            else:
                params[key] = value
        return cdl

    def _load_state(self):
        w = self.work_dir
        self.model = _core.Model.load(os.path.join(w, "network.nc"), threads=self.threads)
        self._input_layer = self.model.input_layers[0]
        self._output_layer = self.model.output_layers[0]
        self._input_items = self.model.items(self._input_layer)
        self._output_items = self.model.items(self._output_layer)
        if self._input_items is None or self._output_items is None:
            raise _core.Error(f"{w}/network.nc: the network does not carry its items")
        self._input_column = {name: c for c, name in enumerate(self._input_items) if name}
        history = _core.read_datasets(os.path.join(w, "input.nc"))["input"].tocsr()
        samples = _read_index(os.path.join(w, "samples.idx"))
        self._history_row = {name: r for r, name in enumerate(samples)}
        self._history = history

    # ---- using a fitted recommender ----------------------------------------------------------
    def _check_fitted(self):
        if self.model is None:
            raise RuntimeError("this Recommender is not fitted: call fit() or Recommender.load()")

    def _to_user(self, text):
        return self._user_ids.get(text, text) if self._user_ids else text

    def _to_item(self, text):
        if self._item_ids and text in self._item_ids:
            return self._item_ids[text]
        return int(text) if self._item_type == "int" else text

    def _batch(self, users, histories):
        """CSR rows (float32 ones) over the network's input items: each user's fitted
        history, or histories[user] (a list of item ids) where given."""
        import scipy.sparse as sp
        indptr, indices = [0], []
        width = len(self._input_items)
        for u in users:
            key = _id_text(u, "user")
            if histories is not None and u in histories:
                cols = sorted({self._input_column[str(i)] for i in histories[u]
                               if str(i) in self._input_column})
            elif key in self._history_row:
                r = self._history_row[key]
                cols = sorted(set(self._history.indices[self._history.indptr[r]:
                                                        self._history.indptr[r + 1]].tolist()))
            else:
                raise ValueError(f"user {u!r}: not in the fitted data; pass histories={{user: "
                                 "[item ids]}} for a user the network has not seen")
            indices += cols
            indptr.append(len(indices))
        data = np.ones(len(indices), np.float32)
        return sp.csr_matrix((data, np.asarray(indices, np.int64), np.asarray(indptr)),
                             shape=(len(users), width))

    def _top_k(self, users, k, exclude_seen, histories):
        x = self._batch(users, histories)
        exclude = None
        if exclude_seen:
            if self._input_items == self._output_items:
                exclude = x
            else:
                out_col = {n: c for c, n in enumerate(self._output_items) if n}
                exclude = [[out_col[self._input_items[c]] for c in
                            x.indices[x.indptr[r]:x.indptr[r + 1]]
                            if self._input_items[c] in out_col] for r in range(x.shape[0])]
        return self.model.predict(x, k=k, exclude=exclude)

    def recommend(self, users, k=10, exclude_seen=True, histories=None, return_scores=False):
        """The top k item ids (the caller's own ids) for each user, best first.

        users: one user id or a sequence of them. histories: {user id: [item ids]} for users
        to score from those items instead of the fitted ones (new users included).
        exclude_seen: leave each user's own items out. With return_scores, also the scores.
        A user with fewer than k candidates gets a shorter list.
        """
        self._check_fitted()
        single = np.isscalar(users) or isinstance(users, str)
        users = [users] if single else list(users)
        idx, score = self._top_k(users, k, exclude_seen, histories)
        lists, scores = [], []
        for r in range(len(users)):
            keep = [j for j in range(idx.shape[1]) if np.isfinite(score[r, j])]
            lists.append([self._to_item(self._output_items[idx[r, j]]) for j in keep])
            scores.append([float(score[r, j]) for j in keep])
        if single:
            lists, scores = lists[0], scores[0]
        return (lists, scores) if return_scores else lists

    def evaluate(self, held_out, k=10, user_col="userId", item_col="movieId", histories=None):
        """Recall@k, precision@k and NDCG@k of the recommendations against held-out items,
        by nn-predict's rule: each user's own items are excluded from the ranking, a held-out
        item the network does not know is dropped, a user with no known held-out item is not
        counted, recall@k divides the hits by min(k, held-out items), and NDCG@k's ideal is
        min(k, held-out items) hits at the top. Averaged over the users counted.

        held_out: a DataFrame (user_col, item_col) or a tuple (users, items).
        Returns {"users": n, "recall": r, "precision": p, "ndcg": g}.
        """
        self._check_fitted()
        users, items = _pairs(held_out, user_col, item_col, None, None, None, None, "held_out")
        out_col = {n: c for c, n in enumerate(self._output_items) if n}
        truth = {}
        for u, i in zip(users.tolist(), items.tolist()):
            c = out_col.get(str(i))
            if c is not None:
                truth.setdefault(u, set()).add(c)
        scored = [u for u in truth]
        sums = np.zeros(3)
        for start in range(0, len(scored), 1024):
            batch = scored[start:start + 1024]
            idx, score = self._top_k(batch, k, True, histories)
            for r, u in enumerate(batch):
                t = truth[u]
                hits, dcg = 0, 0.0
                for j in range(k):
                    if j < idx.shape[1] and np.isfinite(score[r, j]) and int(idx[r, j]) in t:
                        hits += 1
                        dcg += 1.0 / math.log2(j + 2)
                ideal = sum(1.0 / math.log2(j + 2) for j in range(min(k, len(t))))
                sums += (hits / min(k, len(t)), hits / k, dcg / ideal)
        n = len(scored)
        if n == 0:
            return {"users": 0, "recall": 0.0, "precision": 0.0, "ndcg": 0.0}
        return {"users": n, "recall": float(sums[0] / n), "precision": float(sums[1] / n),
                "ndcg": float(sums[2] / n)}

    # ---- files ---------------------------------------------------------------------------------
    def save(self, path):
        """Writes the fitted recommender to the folder `path` (created): network.nc (which
        nn-serve -n and nn-export use alone), the fitted histories (input.nc with its
        features.idx and samples.idx) and recommender.json. Returns the folder."""
        self._check_fitted()
        path = os.path.abspath(os.fspath(path))
        os.makedirs(path, exist_ok=True)
        for name in ("network.nc", "input.nc", "features.idx", "samples.idx"):
            src = os.path.join(self.work_dir, name)
            if os.path.abspath(src) != os.path.join(path, name):
                shutil.copyfile(src, os.path.join(path, name) + ".part")
                os.replace(os.path.join(path, name) + ".part", os.path.join(path, name))
        state = {"config": self.config, "settings": self.settings,
                 "user_type": self._user_type, "item_type": self._item_type,
                 "validation_users": [str(u) for u in self.validation_users]}
        with open(os.path.join(path, STATE_FILE) + ".part", "w") as f:
            json.dump(state, f, indent=2)
        os.replace(os.path.join(path, STATE_FILE) + ".part", os.path.join(path, STATE_FILE))
        return path

    @classmethod
    def load(cls, path, threads=0):
        """A Recommender saved by save(), ready to recommend and evaluate (it works in `path`)."""
        path = os.path.abspath(os.fspath(path))
        state_path = os.path.join(path, STATE_FILE)
        if not os.path.exists(state_path):
            raise FileNotFoundError(f"{path}: no {STATE_FILE}; is it a folder written by "
                                    "Recommender.save()?")
        with open(state_path) as f:
            state = json.load(f)
        try:
            config = state["config"]
            rec = cls.__new__(cls)
            rec.config = config
            rec._config_dir = None
            rec.settings = dict(state.get("settings", {}))
            rec._user_type, rec._item_type = state["user_type"], state["item_type"]
        except KeyError as e:
            raise ValueError(f"{state_path}: missing key {e.args[0]!r}") from None
        rec.threads, rec.verbose, rec._own_dir, rec.work_dir = threads, False, False, path
        rec._user_ids, rec._item_ids = {}, {}
        rec._load_state()
        conv = int if rec._user_type == "int" else str
        rec._user_ids = {name: conv(name) for name in rec._history_row}
        rec.validation_users = [conv(u) for u in state.get("validation_users", [])]
        return rec
