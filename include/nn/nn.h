// The library's public API in one include: Model (topology + parameters), Evaluator (forward
// passes and top-K over one Model, one per thread), Trainer and Dataset. docs/library.md
// describes it; the Python module (python/, docs/python.md) is built on it.
#pragma once

#include "nn/dataset.h"
#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/trainer.h"
