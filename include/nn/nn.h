// The library's public API in one include: Model (topology + parameters), Evaluator (forward
// passes and top-K over one Model, one per thread), Trainer and Dataset; the jobs the tools run
// (command files, training and prediction jobs, dataset files from text examples and image
// corpora), ONNX export and the serving engine; the typed errors and the log sink; the process
// (MPI ranks, memory budget).
// docs/library.md describes it; the Python module (python/, docs/python.md) is built on it.
#pragma once

#include "nn/command_file.h"
#include "nn/dataset.h"
#include "nn/encode.h"
#include "nn/error.h"
#include "nn/evaluator.h"
#include "nn/export.h"
#include "nn/file_names.h"
#include "nn/generate.h"
#include "nn/log.h"
#include "nn/model.h"
#include "nn/predict_job.h"
#include "nn/process.h"
#include "nn/serve.h"
#include "nn/stop.h"
#include "nn/train_job.h"
#include "nn/trainer.h"
