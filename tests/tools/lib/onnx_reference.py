#!/usr/bin/python3
"""A small reference evaluator of ONNX graphs in NumPy (float64), for the operators nn-export
writes. It parses the model with Debian's python3-onnx, so the export is checked in CI without
onnxruntime; tests/tools/export_onnx.sh compares its results with nn-predict's.

    onnx_reference.py model.onnx inputs.npy outputs.npz    (one input; every graph output)
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def windows(x, kernel, strides, pads):
    """Per output position, the input window of x [N, C, *spatial] padded with NaN (so a
    pooling can leave the padding out): [N, C, *out, *kernel]."""
    d = len(kernel)
    pad_width = [(0, 0), (0, 0)] + [(pads[i], pads[i + d]) for i in range(d)]
    xp = np.pad(x, pad_width, constant_values=np.nan)
    out = [(xp.shape[2 + i] - kernel[i]) // strides[i] + 1 for i in range(d)]
    v = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=tuple(range(2, 2 + d)))
    index = tuple([slice(None), slice(None)] +
                  [slice(0, out[i] * strides[i], strides[i]) for i in range(d)])
    return v[index]


def conv(x, w, b, a):
    kernel = list(w.shape[2:])
    d = len(kernel)
    strides = a.get("strides", [1] * d)
    pads = a.get("pads", [0] * (2 * d))
    win = np.nan_to_num(windows(x, kernel, strides, pads), nan=0.0)  # zero padding
    # win [N, C, *out, *k] x w [M, C, *k] -> [N, M, *out]
    n, c = win.shape[:2]
    out = win.shape[2:2 + d]
    cols = np.moveaxis(win, 1, 1 + d).reshape(n, *out, -1)  # [N, *out, C * k]
    y = cols @ w.reshape(w.shape[0], -1).T  # [N, *out, M]
    y = np.moveaxis(y, -1, 1)
    return y + b.reshape(1, -1, *([1] * d))


def pool(x, a, reduce):
    kernel = list(a["kernel_shape"])
    d = len(kernel)
    win = windows(x, kernel, a.get("strides", [1] * d), a.get("pads", [0] * (2 * d)))
    axes = tuple(range(-d, 0))
    return reduce(win, axis=axes)


def run(model, feeds):
    values = dict(feeds)
    for init in model.graph.initializer:
        values[init.name] = numpy_helper.to_array(init).astype(
            np.float64 if init.data_type == onnx.TensorProto.FLOAT else np.int64)
    for node in model.graph.node:
        i = [values[n] for n in node.input]
        a = attrs(node)
        op = node.op_type
        if op == "MatMul":
            r = i[0] @ i[1]
        elif op == "Add":
            r = i[0] + i[1]
        elif op == "Mul":
            r = i[0] * i[1]
        elif op == "Div":
            r = i[0] / i[1]
        elif op == "Max":
            r = np.maximum(i[0], i[1])
        elif op == "Sqrt":
            r = np.sqrt(i[0])
        elif op == "Reshape":
            r = i[0].reshape([int(s) for s in i[1]])
        elif op == "Flatten":
            r = i[0].reshape(i[0].shape[0], -1)
        elif op == "Identity":
            r = i[0]
        elif op == "Sigmoid":
            r = 1.0 / (1.0 + np.exp(-i[0]))
        elif op == "Tanh":
            r = np.tanh(i[0])
        elif op == "Relu":
            r = np.maximum(i[0], 0.0)
        elif op == "LeakyRelu":
            r = np.where(i[0] > 0, i[0], a.get("alpha", 0.01) * i[0])
        elif op == "Elu":
            r = np.where(i[0] > 0, i[0], a.get("alpha", 1.0) * np.expm1(i[0]))
        elif op == "Selu":
            r = a["gamma"] * np.where(i[0] > 0, i[0], a["alpha"] * np.expm1(i[0]))
        elif op == "Softplus":
            r = np.logaddexp(0.0, i[0])
        elif op == "Softsign":
            r = i[0] / (1.0 + np.abs(i[0]))
        elif op == "Softmax":
            e = np.exp(i[0] - i[0].max(axis=1, keepdims=True))
            r = e / e.sum(axis=1, keepdims=True)
        elif op == "Clip":
            r = np.clip(i[0], i[1], i[2])
        elif op == "BatchNormalization":
            x, scale, bias, mean, var = i
            shape = (1, -1) + (1,) * (x.ndim - 2)
            r = ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + a.get("epsilon", 1e-5)) *
                 scale.reshape(shape) + bias.reshape(shape))
        elif op == "Conv":
            r = conv(i[0], i[1], i[2], a)
        elif op == "MaxPool":
            r = pool(i[0], a, np.nanmax)
        elif op == "AveragePool":
            r = pool(i[0], a, np.nanmean)
        elif op == "TopK":
            k = int(i[1][0])
            order = np.argsort(-i[0], axis=-1, kind="stable")[..., :k]
            values[node.output[0]] = np.take_along_axis(i[0], order, axis=-1)
            values[node.output[1]] = order
            continue
        else:
            raise SystemExit(f"onnx_reference: operator {op} is not implemented")
        values[node.output[0]] = r
    return {o.name: values[o.name] for o in model.graph.output}


def main():
    model = onnx.load(sys.argv[1])
    onnx.checker.check_model(model)
    x = np.load(sys.argv[2]).astype(np.float64)
    out = run(model, {model.graph.input[0].name: x})
    np.savez(sys.argv[3], **out)


if __name__ == "__main__":
    main()
