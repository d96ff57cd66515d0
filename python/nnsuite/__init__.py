"""nnsuite: the nn engine (a DSSTNE-style neural network suite) from Python.

Model      topology + parameters: Model.load(path), Model.from_json(json, datasets), save(),
           layers, weights as NumPy arrays (get_weights / set_weights), predict(), outputs()
Evaluator  forward passes with buffers of its own over a shared Model (one per thread)
Trainer    trains a Model on NumPy / scipy.sparse CSR data with a per-epoch callback, validation
           (recall@K, NDCG) and early stopping as nn-train's
train      runs a CDL Train command file as nn-train does
predict    runs a CDL Predict command file as nn-predict does; returns its metrics
read_datasets  a NetCDF dataset file (nn-generate's output) as NumPy / SciPy arrays
generate   text examples or rating rows -> a NetCDF dataset file, as nn-generate makes it
write_datasets  NumPy / SciPy arrays (with their items' names) -> a NetCDF dataset file
Recommender  fit / recommend / evaluate / save / load over interactions (a pandas DataFrame,
           a scipy.sparse matrix or id arrays), trained by a shipped config as nn-train trains

See docs/python.md. Errors: ValueError / TypeError for bad arguments and bad files (the message
names the argument, file or layer), nnsuite.Error for engine failures (divergence, I/O).
"""

import glob as _glob
import os as _os
import warnings

from . import _blas

# Before the engine (and OpenBLAS with it) loads: this CPU's kernels (see _blas.py).
_cores = _glob.glob(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "_core*.so"))
if _cores:
    _blas.choose_kernels(_cores[0])

from ._core import (  # noqa: E402, F401
    Error,
    Evaluator,
    LayerInfo,
    Model,
    WeightInfo,
    blas_kernels,
    blas_kernels_override,
    generate,
    mpi_rank,
    mpi_size,
    predict,
    read_datasets,
    train,
    write_datasets,
)
from .recommender import Recommender  # noqa: E402
from .trainer import Trainer, ranking_metrics  # noqa: E402

__all__ = ["Error", "Evaluator", "LayerInfo", "Model", "Trainer", "WeightInfo", "blas_kernels",
           "blas_kernels_override", "generate", "mpi_rank", "mpi_size", "predict", "read_datasets",
           "ranking_metrics", "Recommender", "train", "write_datasets"]
__version__ = "0.1.0"

# OpenBLAS was loaded before this module could choose (numpy linked to the same OpenBLAS, for
# one): on a CPU newer than the library its kernels are an older instruction set's, several
# times slower. The tools restart themselves with OPENBLAS_CORETYPE set; a Python process can
# only be told.
if blas_kernels_override() and not _os.environ.get(_blas.PROBE_ENV):
    warnings.warn(
        "OpenBLAS runs its %s kernels, older than this CPU: dense layers are several times "
        "slower than with its own. Start Python with OPENBLAS_CORETYPE=%s set (docs/performance.md)."
        % (blas_kernels(), blas_kernels_override()), RuntimeWarning, stacklevel=2)
