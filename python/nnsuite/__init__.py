"""nnsuite: the nn engine (a DSSTNE-style neural network suite) from Python.

Model      topology + parameters: Model.load(path), Model.from_json(json, datasets), save(),
           layers, weights as NumPy arrays (get_weights / set_weights), predict(), outputs()
Evaluator  forward passes with buffers of its own over a shared Model (one per thread)
Trainer    trains a Model on NumPy / scipy.sparse CSR data with a per-epoch callback
train      runs a CDL Train command file as nn-train does
predict    runs a CDL Predict command file as nn-predict does; returns its metrics
read_datasets  a NetCDF dataset file (nn-generate's output) as NumPy / SciPy arrays

See docs/python.md. Errors: ValueError / TypeError for bad arguments and bad files (the message
names the argument, file or layer), nnsuite.Error for engine failures (divergence, I/O).
"""

import warnings

from ._core import (  # noqa: F401
    Error,
    Evaluator,
    LayerInfo,
    Model,
    Trainer,
    WeightInfo,
    blas_kernels,
    blas_kernels_override,
    mpi_rank,
    mpi_size,
    predict,
    read_datasets,
    train,
)

__all__ = ["Error", "Evaluator", "LayerInfo", "Model", "Trainer", "WeightInfo", "blas_kernels",
           "blas_kernels_override", "mpi_rank", "mpi_size", "predict", "read_datasets", "train"]
__version__ = "0.1.0"

# OpenBLAS chose its kernels when it loaded, before this module could help: on a CPU newer than
# the library they are an older instruction set's, several times slower. The tools restart
# themselves with OPENBLAS_CORETYPE set; a Python process can only be told.
if blas_kernels_override():
    warnings.warn(
        "OpenBLAS runs its %s kernels, older than this CPU: dense layers are several times "
        "slower than with its own. Start Python with OPENBLAS_CORETYPE=%s set (docs/performance.md)."
        % (blas_kernels(), blas_kernels_override()), RuntimeWarning, stacklevel=2)
