"""nnsuite.Trainer: the engine's training loop (nnsuite._core.Trainer) with nn-train's validation
and early stopping, documented arguments, and errors that name the nearest valid argument
instead of a dump of the binding's signature."""

import difflib
import math

import numpy as np

from . import _core

# Argument -> (default, meaning). The defaults are the library's TrainSettings, which are the CDL
# TrainingParameters defaults (docs/config-reference.md, "One set of names").
SETTINGS = {
    "epochs": (1, "epochs to run (CDL Epochs, nn-train -e)"),
    "minibatch": (1024, "examples per minibatch (MiniBatch, -b/--batch)"),
    "optimizer": ("SGD", "SGD, Momentum, Nesterov, AdaGrad, AdaDelta, RMSProp or Adam "
                         "(Optimizer, --optimizer)"),
    "alpha": (0.1, "learning rate (Alpha, --alpha)"),
    "lambda_": (0.001, "L2 weight decay (Lambda, --lambda)"),
    "lambda1": (0.0, "L1 weight decay (Lambda1, --lambda1)"),
    "mu": (0.9, "momentum / RMSProp decay / Adam beta1 (Mu, --mu)"),
    "mu1": (0.999, "Adam beta2 (Mu1, --mu1)"),
    "alpha_interval": (0, "epochs between alpha *= alpha_multiplier, 0 = never (AlphaInterval)"),
    "alpha_multiplier": (0.5, "the learning-rate factor (AlphaMultiplier)"),
    "seed": (1, "shuffles, dropout and denoising masks (RandomSeed, --seed)"),
    "shuffle": (None, "shuffle the examples each epoch; None: the network's ShuffleIndices"),
    "checkpoint_name": ("", "checkpoint prefix, '' = none: <name><epoch>.nc (CheckpointName)"),
    "checkpoint_interval": (0, "epochs between checkpoints (CheckpointInterval)"),
    "log": (None, "a function called with each progress line (training start, profile)"),
    "profile": (False, "log the time per phase and layer at the end of run() (Profile)"),
    "trace": ("", "a Chrome trace of the first trace_steps steps of every epoch (Trace)"),
    "trace_steps": (20, "steps per epoch in the trace (TraceSteps)"),
    "sparse_update": ("Exact", "Exact, Dense or Lazy (SparseUpdate, --sparse-update)"),
    "tensorboard": ("", "a TensorBoard event folder, '' = none (TensorBoard)"),
    "tensorboard_interval": (0, "also log the minibatch loss every this many updates"),
    "warm_start": (None, "a network file to start from, matched by item name (WarmStart)"),
}
ALIASES = {"batch": "minibatch", "batch_size": "minibatch", "lambda": "lambda_",
           "learning_rate": "alpha", "weight_decay": "lambda_", "random_seed": "seed"}
VALIDATION = ("validation", "validation_k", "validation_interval", "patience", "keep_best",
              "rank_input_items")


def _check_names(kwargs):
    out = {}
    for name, value in kwargs.items():
        key = ALIASES.get(name, name)
        if key not in SETTINGS:
            choices = sorted(set(SETTINGS) | set(ALIASES) | set(VALIDATION))
            near = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(f"Trainer: unknown argument {name!r}{hint}; the arguments are "
                            f"model, data, {', '.join(choices)}")
        if key in out:
            raise TypeError(f"Trainer: {name!r} and another name for {key!r} both given")
        out[key] = value
    return out


def ranking_metrics(model, x, targets, k, exclude_input=True, layer=None):
    """Recall@k and NDCG@k of model's top k for the rows of x against the CSR rows of targets,
    by nn-predict's rule (rows without targets are not counted; recall divides the hits by
    min(k, targets)). Returns (recall, ndcg, rows counted)."""
    import scipy.sparse as sp
    t = sp.csr_matrix(targets)
    exclude = x if exclude_input and sp.issparse(x) and x.shape[1] == t.shape[1] else None
    idx, score = model.predict(x, k=k, exclude=exclude, layer=layer)
    recall = ndcg = 0.0
    counted = 0
    for r in range(t.shape[0]):
        truth = set(t.indices[t.indptr[r]:t.indptr[r + 1]].tolist())
        if not truth:
            continue
        counted += 1
        hits, dcg = 0, 0.0
        for j in range(k):
            if np.isfinite(score[r, j]) and int(idx[r, j]) in truth:
                hits += 1
                dcg += 1.0 / math.log2(j + 2)
        recall += hits / min(k, len(truth))
        ndcg += dcg / sum(1.0 / math.log2(j + 2) for j in range(min(k, len(truth))))
    if counted == 0:
        return 0.0, 0.0, 0
    return recall / counted, ndcg / counted, counted


class Trainer:
    __doc__ = """Trains a Model in place on NumPy / scipy.sparse CSR data (the engine's training
loop, nn-train's, with its arithmetic and seeds).

model: an nnsuite.Model. data: {dataset name: array or CSR matrix}, one per input and output
layer (the layers' DataSet names).

validation: None, or (x, targets): x a batch for the input layer (as Model.predict takes it),
  targets a CSR matrix of each row's held-out items over the output layer's units. Scored every
  validation_interval epochs (and after the last) by recall@validation_k and NDCG, as
  nn-train --validation scores; the callback's dict gains "recall" and "ndcg".
patience: stop after this many evaluations without a better recall (0: never).
keep_best: at the end, the model holds the best evaluated weights (default True, as nn-train's
  KeepBest). rank_input_items: rank each row's input items too (default: left out).

Settings (defaults are the CDL TrainingParameters defaults):
""" + "\n".join(f"  {n} = {d[0]!r}: {d[1]}" for n, d in SETTINGS.items()) + """

Aliases: batch / batch_size -> minibatch, lambda / weight_decay -> lambda_, learning_rate ->
alpha. An unknown argument raises TypeError naming the nearest one.
"""

    def __init__(self, model, data, validation=None, validation_k=10, validation_interval=1,
                 patience=0, keep_best=True, rank_input_items=False, **settings):
        settings = _check_names(settings)
        if validation is not None:
            if not (isinstance(validation, tuple) and len(validation) == 2):
                raise TypeError("validation: expected a tuple (x, targets)")
            if validation_k < 1 or validation_interval < 1 or patience < 0:
                raise ValueError("validation_k and validation_interval: expected >= 1; "
                                 "patience: expected >= 0")
        elif patience:
            raise ValueError("patience: needs validation=(x, targets)")
        self.model = model
        self._validation = validation
        self._k, self._interval, self._patience = validation_k, validation_interval, patience
        self._keep_best, self._rank_inputs = keep_best, rank_input_items
        self._epochs = settings.get("epochs", SETTINGS["epochs"][0])
        self._trainer = _core.Trainer(model, data, **settings)
        self._best = None  # (recall, epoch, weights)
        self._since_best = 0
        self.history = []  # one dict per epoch, as the callback gets them

    @property
    def epoch(self):
        """Epochs run so far."""
        return self._trainer.epoch

    def _evaluate(self, s):
        x, targets = self._validation
        recall, ndcg, _ = ranking_metrics(self.model, x, targets, self._k,
                                          exclude_input=not self._rank_inputs)
        s["recall"], s["ndcg"] = recall, ndcg
        if self._best is None or recall > self._best[0]:
            weights = ({w.name: self.model.get_weights(w.name) for w in self.model.weights}
                       if self._keep_best else None)
            self._best = (recall, s["epoch"], weights)
            self._since_best = 0
            return True
        self._since_best += 1
        return not (self._patience and self._since_best >= self._patience)

    def run(self, callback=None):
        """Runs the epochs not yet run; callback(stats dict) after each returns False to stop.
        Returns this call's epochs' stats (epoch, loss, data_loss, reg_loss, seconds,
        examples_per_second, alpha; with validation, recall and ndcg on the evaluated ones).
        Also kept in .history."""
        ran = []

        def on_epoch(s):
            s = dict(s)
            go_on = True
            if self._validation is not None and (s["epoch"] % self._interval == 0 or
                                                 s["epoch"] == self._epochs):
                go_on = self._evaluate(s)
            ran.append(s)
            self.history.append(s)
            if callback is not None and callback(s) is False:
                return False
            return go_on

        self._trainer.run(callback=on_epoch)
        if (self._keep_best and self._best is not None and self._best[2] is not None and ran and
                self._best[1] != ran[-1]["epoch"]):
            for name, values in self._best[2].items():
                self.model.set_weights(name, values)
        return ran

    @property
    def best(self):
        """(recall, epoch) of the best evaluation, or None without validation."""
        return None if self._best is None else self._best[:2]
