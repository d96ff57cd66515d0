# Training from Python equals training from the CDL with nn-train (same seed), the per-epoch
# callback (loss, examples/s) and stopping early.
import json
import os

import numpy as np

import nnsuite


def assert_same_weights(a, b):
    for w in a.weights:
        np.testing.assert_array_equal(a.get_weights(w.name), b.get_weights(w.name), err_msg=w.name)


def test_train_cdl_equals_nn_train(work, tmp_path):
    cdl = (work / "train.cdl").read_text().replace('"net.nc"', '"py_net.nc"')
    (work / "py_train.cdl").write_text(cdl)
    epochs = []
    model = nnsuite.train(work / "py_train.cdl", callback=epochs.append)
    assert [e["epoch"] for e in epochs] == [1, 2, 3, 4]
    reference = nnsuite.Model.load(work / "net.nc")
    assert_same_weights(model, reference)
    assert_same_weights(nnsuite.Model.load(work / "py_net.nc"), reference)


def test_trainer_on_numpy_data_equals_nn_train(work):
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    y = nnsuite.read_datasets(work / "output.nc")["output"]
    model = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": y}, seed=7)
    seen = []
    trainer = nnsuite.Trainer(model, {"input": x, "output": y}, epochs=4, minibatch=8,
                              optimizer="adam", alpha=0.01, mu=0.9, lambda_=0.001, seed=7)
    stats = trainer.run(callback=seen.append)
    assert len(stats) == 4 and seen == stats
    assert all(s["loss"] > 0 and s["examples_per_second"] > 0 for s in stats)
    assert stats[-1]["loss"] < stats[0]["loss"]
    assert_same_weights(model, nnsuite.Model.load(work / "net.nc"))


def test_callback_stops_early(work):
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    model = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": x})
    trainer = nnsuite.Trainer(model, {"input": x, "output": x}, epochs=10, minibatch=8)
    stats = trainer.run(callback=lambda s: s["epoch"] < 2)
    assert [s["epoch"] for s in stats] == [1, 2] and trainer.epoch == 2


def test_dense_training_data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.random((64, 6), dtype=np.float32)
    y = (x[:, :2] > 0.5).astype(np.float32)
    net = {"Name": "dense", "ErrorFunction": "CrossEntropy", "Layers": [
        {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "x"},
        {"Name": "H", "Kind": "Hidden", "N": 16, "Activation": "Tanh"},
        {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "y", "Activation": "Sigmoid"}]}
    model = nnsuite.Model.from_json(net, datasets={"x": x, "y": y}, seed=2)
    stats = nnsuite.Trainer(model, {"x": x, "y": y}, epochs=30, minibatch=16,
                            optimizer="Adam", alpha=0.01).run()
    assert stats[-1]["loss"] < stats[0]["loss"]
    assert model.outputs(x).shape == (64, 2)
    model.save(tmp_path / "dense.nc")
    np.testing.assert_array_equal(nnsuite.Model.load(tmp_path / "dense.nc").outputs(x),
                                  model.outputs(x))


def test_trainer_profile_and_trace(work, tmp_path):
    # docs/performance.md: the table goes to the log, the trace to its file; the weights are
    # those of the unprofiled run.
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    y = nnsuite.read_datasets(work / "output.nc")["output"]
    model = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": y}, seed=7)
    lines = []
    trace = tmp_path / "trace.json"
    nnsuite.Trainer(model, {"input": x, "output": y}, epochs=4, minibatch=8, optimizer="adam",
                    alpha=0.01, mu=0.9, lambda_=0.001, seed=7, log=lines.append, profile=True,
                    trace=str(trace), trace_steps=1).run()
    table = [line for line in lines if line.startswith("profile: ")]
    assert table and "steps in 4 epoch(s)" in table[0], table
    assert any(line.startswith("profile: forward") for line in table), table
    events = json.loads(trace.read_text())["traceEvents"]
    assert len({e["args"]["step"] for e in events if e["ph"] == "X"}) == 4  # one per epoch
    assert_same_weights(model, nnsuite.Model.load(work / "net.nc"))


def tf_records(path):
    """The payloads of a TFRecord file (length, masked CRCs unchecked here: the C++ tests check them)."""
    data = path.read_bytes()
    out, at = [], 0
    while at + 12 <= len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        out.append(data[at + 12:at + 12 + n])
        at += 12 + n + 4
    assert at == len(data), "the file ends in a torn record"
    return out


def test_trainer_writes_tensorboard_events(work, tmp_path):
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    model = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": x}, seed=3)
    logdir = tmp_path / "tb"
    trainer = nnsuite.Trainer(model, {"input": x, "output": x}, epochs=3, minibatch=8,
                              optimizer="adam", alpha=0.01, seed=3,
                              tensorboard=str(logdir), tensorboard_interval=2)
    stats = trainer.run()
    records = tf_records(logdir / "events.out.tfevents.nn-train")
    epochs = [r for r in records if b"train/loss" in r]
    minibatches = [r for r in records if b"minibatch/" in r]
    steps = len(stats) * -(-x.shape[0] // 8)
    assert len(epochs) == 3
    assert len(minibatches) == steps // 2
    # The run's end record (hparams plugin) follows the last epoch.
    assert records.index(epochs[-1]) < len(records) - 1
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    losses = [e.value for e in acc.Scalars("train/loss")]
    np.testing.assert_array_equal(np.float32(losses), np.float32([s["loss"] for s in stats]))


def test_warm_start_and_items(work):
    # A network trained by nn-train carries its items; a Trainer warm-started from it begins at
    # its weights (numpy data name no items: the item layers, of the same size, are copied by
    # position, and the log says so).
    trained = nnsuite.Model.load(work / "net.nc")
    items = trained.items("Input")
    index = [line.split("\t")[0] for line in (work / "features.idx").read_text().splitlines()]
    assert items[:len(index)] == index and not any(items[len(index):])
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    y = nnsuite.read_datasets(work / "output.nc")["output"]
    model = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": y}, seed=3)
    assert model.items("Input") is None
    lines = []
    nnsuite.Trainer(model, {"input": x, "output": y}, epochs=1, minibatch=8, optimizer="adam",
                    warm_start=work / "net.nc", log=lines.append)
    assert_same_weights(model, trained)  # before any step: the warm start's weights
    assert any("units copied by position" in line for line in lines), lines


def test_validation_patience_and_keep_best(work):
    import scipy.sparse as sp
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    # Each row's last item is its target; the rest its input.
    inputs, targets = x.tolil(copy=True), sp.lil_matrix(x.shape, dtype=np.float32)
    for r in range(x.shape[0]):
        cols = x.indices[x.indptr[r]:x.indptr[r + 1]]
        if len(cols) > 1:
            inputs[r, cols[-1]] = 0
            targets[r, cols[-1]] = 1
    inputs, targets = inputs.tocsr(), targets.tocsr()
    inputs.eliminate_zeros()
    model = nnsuite.Model.from_json(str(work / "network.json"), datasets={"input": x, "output": x},
                                    seed=3)
    trainer = nnsuite.Trainer(model, {"input": x, "output": x}, epochs=12, batch=8, alpha=0.05,
                              optimizer="Adam", validation=(inputs, targets), validation_k=5,
                              patience=2)
    stats = trainer.run()
    recalls = [s["recall"] for s in stats]
    best_recall, best_epoch = trainer.best
    assert best_recall == max(recalls) and stats[best_epoch - 1]["recall"] == best_recall
    # It stopped once 2 evaluations in a row were not better, or ran all 12.
    assert len(stats) == 12 or all(r <= best_recall for r in recalls[best_epoch:])
    assert len(stats) == 12 or len(stats) == best_epoch + 2
    # The model holds the best evaluation's weights (keep_best): scoring it again gives its recall.
    again, ndcg, counted = nnsuite.ranking_metrics(model, inputs, targets, 5)
    assert abs(again - best_recall) < 1e-12 and counted > 0 and 0 <= ndcg <= 1


def test_trainer_names_the_nearest_argument(work):
    x = nnsuite.read_datasets(work / "input.nc")["input"]
    model = nnsuite.Model.from_json(str(work / "network.json"), datasets={"input": x, "output": x})
    import pytest
    with pytest.raises(TypeError, match=r"unknown argument 'epoch' \(did you mean 'epochs'\?\)"):
        nnsuite.Trainer(model, {"input": x, "output": x}, epoch=3)
    with pytest.raises(TypeError, match=r"unknown argument 'validaton' \(did you mean "
                                        r"'validation'\?\)"):
        nnsuite.Trainer(model, {"input": x, "output": x}, validaton=3)
    with pytest.raises(TypeError, match=r"'lambda' and another name for 'lambda_' both given"):
        nnsuite.Trainer(model, {"input": x, "output": x}, lambda_=0.1, **{"lambda": 0.2})
    with pytest.raises(ValueError, match=r"patience: needs validation"):
        nnsuite.Trainer(model, {"input": x, "output": x}, patience=2)
    assert "alpha_multiplier" in nnsuite.Trainer.__doc__ and "lambda_ = 0.001" in \
        nnsuite.Trainer.__doc__
    t = nnsuite.Trainer(model, {"input": x, "output": x}, epochs=4, alpha=0.1, alpha_interval=2,
                        alpha_multiplier=0.5, minibatch=8)
    assert [round(s["alpha"], 6) for s in t.run()] == [0.1, 0.1, 0.05, 0.05]


def test_write_datasets_round_trip_and_items(tmp_path):
    import pytest
    import scipy.sparse as sp
    x = sp.csr_matrix(np.array([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 0, 1]], np.float32))
    dense = np.arange(6, dtype=np.float32).reshape(3, 2)
    names = ["apple", "pear", "", "fig"]
    nnsuite.write_datasets(tmp_path / "d.nc", {"input": x, "output": x, "side": dense},
                           items={"input": names, "output": names})
    back = nnsuite.read_datasets(tmp_path / "d.nc")
    assert sorted(back) == ["input", "output", "side"]
    assert (back["input"] != x).nnz == 0 and np.array_equal(back["side"], dense)
    # A network trained on the file carries the items (nn-train, as a CDL run).
    (tmp_path / "net.json").write_text(json.dumps({"Name": "t", "Layers": [
        {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": True},
        {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
         "Activation": "Sigmoid"}]}))
    (tmp_path / "train.cdl").write_text(json.dumps({
        "Version": 0.9, "Network": "net.json", "Command": "Train", "Data": ["d.nc"],
        "TrainingParameters": {"Epochs": 1, "MiniBatch": 2, "CheckpointInterval": 0,
                               "Results": "net.nc"}}))
    model = nnsuite.train(tmp_path / "train.cdl")
    assert model.items("Output")[:4] == names
    with pytest.raises(ValueError, match=r"feature names: .*repeats"):
        nnsuite.write_datasets(tmp_path / "e.nc", {"input": x}, items={"input": ["a", "a"]})
    with pytest.raises(ValueError, match=r"items: no dataset named 'nope'"):
        nnsuite.write_datasets(tmp_path / "e.nc", {"input": x}, items={"nope": ["a"]})
    assert not (tmp_path / "e.nc").exists()


def test_train_cdl_resumes_from_its_checkpoint(work, tmp_path):
    import shutil
    for f in ("network.json", "input.nc", "output.nc"):
        shutil.copy(work / f, tmp_path / f)
    cdl = json.loads((work / "train.cdl").read_text().replace("%s", "x"))
    cdl["TrainingParameters"].update({"CheckpointInterval": 1, "CheckpointName": "ck",
                                      "Results": "resumed.nc"})
    (tmp_path / "train.cdl").write_text(json.dumps(cdl))
    # Stopped by the callback after epoch 2 (the last checkpoint is epoch 1's), then resumed
    # from that checkpoint to the 4 epochs: the uninterrupted run's network.
    first = []
    nnsuite.train(tmp_path / "train.cdl", callback=lambda s: first.append(s) or s["epoch"] < 2)
    assert [s["epoch"] for s in first] == [1, 2] and (tmp_path / "ck1.nc").exists()
    rest = []
    model = nnsuite.train(tmp_path / "train.cdl", callback=rest.append, resume=True)
    assert [s["epoch"] for s in rest] == [2, 3, 4]
    assert_same_weights(model, nnsuite.Model.load(work / "net.nc"))
    import pytest
    with pytest.raises(TypeError, match="resume: expected True, False or None"):
        nnsuite.train(tmp_path / "train.cdl", resume="auto")
