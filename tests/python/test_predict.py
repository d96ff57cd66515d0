# Prediction: equal to nn-predict's on the same network and data, dense and CSR inputs agree,
# exclusion, full outputs of any layer, several Evaluator threads equal one, and an L2-normalised
# input with a Variational layer equal to nn-predict's.
import json
import subprocess
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp

import nnsuite


def labels(path):
    return [line.split("\t")[0] for line in open(path)]


def test_outputs_equal_nn_predict_dump(work, tools, tmp_path):
    subprocess.run([tools / "nn-predict", "-n", work / "net.nc", "-r", work / "ratings.txt",
                    "-i", work / "features.idx", "--dump-layer", "Output",
                    "--dump", tmp_path / "dump.nc"], check=True, capture_output=True)
    dumped = nnsuite.read_datasets(tmp_path / "dump.nc")
    (reference,) = dumped.values()
    reference = reference.toarray() if sp.issparse(reference) else reference
    m = nnsuite.Model.load(work / "net.nc")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    np.testing.assert_array_equal(m.outputs(x, layer="Output"), reference)


def test_top_k_equals_nn_predict_recs(work, tools, tmp_path):
    out = subprocess.run([tools / "nn-predict", "-n", work / "net.nc", "-r", work / "ratings.txt",
                          "-i", work / "features.idx", "-o", work / "features.idx",
                          "-f", work / "ratings.txt", "-k", "5", "-p", "%.9g"],
                         check=True, capture_output=True, text=True).stdout
    features = labels(work / "features.idx")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    idx, score = nnsuite.Model.load(work / "net.nc").predict(x, k=5, exclude=x)
    assert idx.shape == (x.shape[0], 5) and idx.dtype == np.uint32
    for row, line in enumerate(out.splitlines()):
        items = [t.split(",") for t in line.split("\t")[1].split(":") if t]
        assert [features[i] for i in idx[row]] == [name for name, _ in items]
        np.testing.assert_allclose(score[row], [float(s) for _, s in items], rtol=1e-6)


def test_dense_and_csr_agree(work):
    m = nnsuite.Model.load(work / "net.nc")
    # A sparse input layer sums a row's entries in their stored order; a dense row becomes
    # entries in column order, so the two agree exactly for CSR in scipy's canonical form.
    x = nnsuite.read_datasets(work / "input.nc")["input"].sorted_indices()
    dense = x.toarray()
    i1, s1 = m.predict(x, k=7)
    i2, s2 = m.predict(dense, k=7)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(s1, s2)
    # Any index dtype; a single example as a 1-D array.
    x32 = sp.csr_matrix((x.data, x.indices.astype(np.int32), x.indptr.astype(np.int32)),
                        shape=x.shape)
    np.testing.assert_array_equal(m.outputs(x32), m.outputs(dense))
    # One row runs a 1-row gemm, whose rounding may differ from a batch's in the last bit.
    np.testing.assert_allclose(m.outputs(dense[3])[0], m.outputs(dense)[3], rtol=1e-6)


def test_hidden_layer_outputs_and_exclusion_lists(work):
    m = nnsuite.Model.load(work / "net.nc")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    h = m.outputs(x, layer="Hidden")
    assert h.shape == (x.shape[0], 8)
    full = m.outputs(x[:2])
    idx, score = m.predict(x[:2], k=3, exclude=[[int(np.argmax(full[0]))], []])
    assert int(np.argmax(full[0])) not in idx[0]
    assert idx[1][0] == int(np.argmax(full[1]))
    np.testing.assert_array_equal(score[1], np.sort(full[1])[::-1][:3])


def test_evaluator_threads_equal_one(work):
    m = nnsuite.Model.load(work / "net.nc")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    x = sp.vstack([x] * 20).tocsr()  # enough work for the threads to overlap
    # The same chunking as the threads below (gemm results may depend on the batch size).
    reference = m.evaluator(max_batch=64).predict(x, k=10)
    results = [None] * 4

    def work_on(i):
        ev = m.evaluator(max_batch=64)
        results[i] = ev.predict(x, k=10)

    threads = [threading.Thread(target=work_on, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for idx, score in results:
        np.testing.assert_array_equal(idx, reference[0])
        np.testing.assert_array_equal(score, reference[1])
    # Model.predict from several threads at once takes an Evaluator each from its pool.
    outs = [None] * 4

    def predict(i):
        outs[i] = m.predict(x, k=10)

    threads = [threading.Thread(target=predict, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for idx, _ in outs:
        np.testing.assert_array_equal(idx, reference[0])


def test_gil_released_while_computing():
    """While one thread is inside outputs(), another runs Python code: the GIL is released for
    the forward pass. With the GIL held, the main thread could only run for a switch interval
    (5 ms) between the worker's start and its end, not for most of a pass that takes longer."""
    net = {"Name": "wide", "Kind": "FeedForward", "ErrorFunction": "CrossEntropy",
           "Layers": [{"Name": "Input", "Kind": "Input", "N": 1024, "DataSet": "input"},
                      {"Name": "Hidden", "Kind": "Hidden", "N": 1024, "Activation": "Sigmoid"},
                      {"Name": "Output", "Kind": "Output", "N": 1024, "DataSet": "output",
                       "Activation": "Sigmoid"}]}
    m = nnsuite.Model.from_json(net, datasets={"input": 1024, "output": 1024}, seed=1)
    x = np.random.default_rng(0).random((2048, 1024), dtype=np.float32)
    m.outputs(x[:8])  # allocations and thread start-up out of the way
    started, done = threading.Event(), threading.Event()
    span = {}

    def worker():
        started.set()
        t0 = time.perf_counter()
        m.outputs(x)
        span["compute"] = time.perf_counter() - t0
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    first = last = time.perf_counter()
    while not done.is_set():
        last = time.perf_counter()
    t.join()
    assert span["compute"] > 0.02, "the pass is too short to tell"
    assert last - first > 0.5 * span["compute"], (
        f"main thread ran {last - first:.4f} s of a {span['compute']:.4f} s pass")


def test_several_input_layers_by_name():
    """A network with two input layers takes a dict {input layer: batch}; the outputs equal the
    forward pass computed from the weights with NumPy, dense or CSR per tower."""
    net = {"Name": "two", "Kind": "FeedForward", "ErrorFunction": "L2",
           "Layers": [{"Name": "A", "Kind": "Input", "N": 5, "DataSet": "a"},
                      {"Name": "B", "Kind": "Input", "N": 3, "DataSet": "b"},
                      {"Name": "H", "Kind": "Hidden", "N": 4, "Source": ["A", "B"],
                       "Activation": "Sigmoid"},
                      {"Name": "Out", "Kind": "Output", "N": 2, "DataSet": "y",
                       "Activation": "Linear"}]}
    m = nnsuite.Model.from_json(net, datasets={"a": 5, "b": 3, "y": 2}, seed=3)
    assert m.input_layers == ["A", "B"]
    rng = np.random.default_rng(0)
    a = rng.random((6, 5), dtype=np.float32)
    b = rng.random((6, 3), dtype=np.float32) * (rng.random((6, 3)) < 0.5)
    w = {name: m.get_weights(name).astype(np.float64) for name in
         ["H<-A:weights", "H<-A:bias", "H<-B:weights", "H<-B:bias", "Out<-H:weights",
          "Out<-H:bias"]}
    z = a @ w["H<-A:weights"] + w["H<-A:bias"] + b @ w["H<-B:weights"] + w["H<-B:bias"]
    want = (1 / (1 + np.exp(-z))) @ w["Out<-H:weights"] + w["Out<-H:bias"]
    got = m.outputs({"A": a, "B": b})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(m.outputs({"B": sp.csr_matrix(b), "A": a}), got)
    idx, score = m.predict({"A": a, "B": b}, k=1)
    np.testing.assert_array_equal(idx[:, 0], np.argmax(got, axis=1))
    # Every input layer once, known names, equal rows; the message names the batch.
    for x, message in [(a, r"x: the network has 2 input layers \(A, B\)"),
                       ({"A": a}, r"x: no batch for input layer 'B'"),
                       ({"A": a, "B": b[:3]}, r"x\['B'\]: has 3 rows; x\['A'\] has 6"),
                       ({"A": a, "C": b}, r"x\['C'\]: no input layer of that name"),
                       ({"A": a, "B": a}, r"x\['B'\]: has 5 columns")]:
        with pytest.raises(ValueError, match=message):
            m.outputs(x)


def test_predict_cdl_equals_nn_predict(work, tools, tmp_path):
    cdl = {"Version": 0.9, "Network": str(work / "net.nc"), "Command": "Predict",
           "Data": [str(work / "input.nc")],
           "PredictionParameters": {"K": 5, "Output": str(tmp_path / "py.recs"),
                                    "OutputIndex": str(work / "features.idx"),
                                    "SampleIndex": str(work / "samples.idx"),
                                    "Filter": str(work / "ratings.txt"),
                                    "Target": str(work / "output.nc")}}
    (tmp_path / "predict.cdl").write_text(json.dumps(cdl))
    lines = []
    result = nnsuite.predict(tmp_path / "predict.cdl", log=lines.append)
    assert result["examples"] == 60 and result["layer"] == "Output" and result["k"] == 5
    assert result["evaluated"] == 60 and len(result["recall"]) == 5
    # The filter removes every target item: nothing can be recalled.
    assert result["recall"] == [0.0] * 5
    assert any(line.startswith("metrics over 60 examples") for line in lines)
    tool = subprocess.run([tools / "nn-predict", tmp_path / "predict.cdl", "-s",
                           tmp_path / "tool.recs"], check=True, capture_output=True, text=True)
    assert (tmp_path / "py.recs").read_text() == (tmp_path / "tool.recs").read_text()
    assert "metrics over 60 examples" in tool.stderr
    with pytest.raises(ValueError, match=r"Command is Train; predict runs Predict"):
        nnsuite.predict(work / "train.cdl")


def test_fewer_columns_than_the_padded_width(work):
    """A batch as wide as the feature index (30 items here) rather than the input layer's width
    (rounded up to 128 by nn-generate) is padded with zeros: same answers, dense or CSR."""
    m = nnsuite.Model.load(work / "net.nc")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    x.sort_indices()  # dense rows are summed in column order: make the CSR rows agree
    features = sum(1 for _ in open(work / "features.idx"))
    assert features < x.shape[1] == m.layer("Input").units
    narrow = x[:, :features]
    assert narrow.nnz == x.nnz  # the dropped columns were all padding
    want_idx, want_score = m.predict(x, k=5, exclude=x)
    for batch in (narrow, narrow.toarray()):
        idx, score = m.predict(batch, k=5, exclude=narrow)
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(score, want_score)
        np.testing.assert_array_equal(m.outputs(batch), m.outputs(x))
    # One row as a 1-D array of the index's width.
    np.testing.assert_array_equal(m.outputs(narrow[0].toarray()[0]), m.outputs(x[0]))


MULT_VAE = """{ "Name": "tiny-mult-vae", "ErrorFunction": "CrossEntropy", "SoftMaxTargets": "Raw",
  "Denoising": { "p": 0.5 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true,
      "Normalize": "L2" },
    { "Name": "Encoder", "Kind": "Hidden", "N": 8, "Activation": "Tanh" },
    { "Name": "Code", "Kind": "Hidden", "Type": "Variational", "N": 4,
      "KL": { "Beta": 0.2, "AnnealSteps": 10 } },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "SoftMax" } ] }
"""


def test_normalized_input_and_variational_layer_equal_nn_predict(work, tools, tmp_path):
    # The Evaluator L2-normalises input rows as nn-predict's batches do (CSR and dense alike), and
    # a Variational layer outputs its mean: the same outputs as nn-predict's dump, every time.
    (tmp_path / "network.json").write_text(MULT_VAE)
    cdl = json.loads((work / "train.cdl").read_text())
    cdl["Data"] = [str(work / "input.nc"), str(work / "output.nc")]
    (tmp_path / "train.cdl").write_text(json.dumps(cdl))
    subprocess.run([tools / "nn-train", "-q", "train.cdl"], cwd=tmp_path, check=True,
                   capture_output=True)
    subprocess.run([tools / "nn-predict", "-n", tmp_path / "net.nc", "-r", work / "ratings.txt",
                    "-i", work / "features.idx", "--dump-layer", "Output",
                    "--dump", tmp_path / "dump.nc"], check=True, capture_output=True)
    (reference,) = nnsuite.read_datasets(tmp_path / "dump.nc").values()
    reference = reference.toarray() if sp.issparse(reference) else reference
    m = nnsuite.Model.load(tmp_path / "net.nc")
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    np.testing.assert_array_equal(m.outputs(x, layer="Output"), reference)
    np.testing.assert_allclose(m.outputs(x.toarray(), layer="Output"), reference, rtol=1e-5)
    np.testing.assert_array_equal(m.outputs(x, layer="Output"), m.outputs(x, layer="Output"))
    # Scaling a row does not change what an L2-normalised input sees.
    np.testing.assert_allclose(m.outputs(3.0 * x.toarray(), layer="Output"), reference, rtol=1e-5)
