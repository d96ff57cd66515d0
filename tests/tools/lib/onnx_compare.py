#!/usr/bin/python3
"""Compares an ONNX model's outputs with nn-predict's dumped activations (tests/tools/
lib/onnx_models.sh): within 1e-5 everywhere, and the TopK output equal to the top of the scores.

    onnx_compare.py EVALUATOR model.onnx inputs out.txt [features.idx]
EVALUATOR is "reference" (lib/onnx_reference.py, NumPy) or "onnxruntime". `inputs` is a dump of
the input layer (sample<TAB>v,v,...), or text examples (sample<TAB>item:item) with the feature
index that numbers the items."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def read_dump(path):
    rows = []
    for line in open(path):
        rows.append([float(v) for v in line.rstrip("\n").split("\t")[1].split(",")])
    return np.array(rows, dtype=np.float32)


def read_examples(path, index_path, width):
    index = dict(line.rstrip("\n").split("\t") for line in open(index_path))
    lines = open(path).read().splitlines()
    x = np.zeros((len(lines), width), np.float32)
    for r, line in enumerate(lines):
        for item in line.split("\t")[1].split(":"):
            x[r, int(index[item])] = 1.0
    return x


def evaluate(kind, model_path, x):
    import onnx
    model = onnx.load(model_path)
    if kind == "onnxruntime":
        import onnxruntime
        s = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        got = s.run(None, {s.get_inputs()[0].name: x})
        return {o.name: v for o, v in zip(s.get_outputs(), got)}, model
    import onnx_reference
    return onnx_reference.run(model, {model.graph.input[0].name: x.astype(np.float64)}), model


def main():
    kind, model_path, inputs, dump = sys.argv[1:5]
    want = read_dump(dump)
    import onnx
    width = onnx.load(model_path).graph.input[0].type.tensor_type.shape.dim[1].dim_value
    x = read_examples(inputs, sys.argv[5], width) if len(sys.argv) > 5 else read_dump(inputs)
    out, model = evaluate(kind, model_path, x)
    scores = np.asarray(out[model.graph.output[0].name], dtype=np.float64)
    assert scores.shape == want.shape, (scores.shape, want.shape)
    diff = float(np.abs(scores - want).max())
    print(f"{os.path.basename(model_path)} ({kind}): {want.shape[0]} rows x {want.shape[1]} "
          f"scores, largest difference from nn-predict {diff:.2e}")
    assert diff <= 1e-5, f"differs from nn-predict by {diff}"
    # Relative to the largest score too: a SoftMax over thousands of items has scores near 1e-4,
    # where an absolute 1e-5 would let a wrong graph pass.
    scale = float(np.abs(want).max())
    assert diff <= 1e-4 * scale, f"differs from nn-predict by {diff}, {diff / scale:.1e} of the largest score"
    if len(model.graph.output) == 3:  # TopK: the k best of the scores, best first
        top = np.asarray(out[model.graph.output[1].name], dtype=np.float64)
        k = top.shape[1]
        assert np.allclose(top, -np.sort(-scores, axis=1)[:, :k], atol=1e-6), "TopK scores"
        idx = np.asarray(out[model.graph.output[2].name])
        assert np.allclose(np.take_along_axis(scores, idx.astype(np.int64), axis=1), top,
                           atol=1e-6), "TopK indices"
        print(f"  TopK output: the {k} best scores and their columns, as the scores say")


if __name__ == "__main__":
    main()
