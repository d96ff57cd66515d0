# Every bad argument is rejected with a message that names it.
import numpy as np
import pytest
import scipy.sparse as sp

import nnsuite


@pytest.fixture(scope="module")
def model(work):
    return nnsuite.Model.load(work / "net.nc")


@pytest.fixture(scope="module")
def x(work):
    return nnsuite.read_datasets(work / "input.nc")["input"]


def test_bad_inputs(model, x):
    with pytest.raises(ValueError, match=r"^x: expected float32 values; got float64"):
        model.predict(x.toarray().astype(np.float64))
    with pytest.raises(ValueError, match=r"^x: expected float32 values; got float64"):
        model.predict(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"^x: scipy.sparse matrices must be in CSR format; "
                                         r"got 'coo'"):
        model.predict(x.tocoo())
    # Fewer columns than the layer are padded with zeros (test_predict.py); more are an error.
    units = model.layer("Input").units
    with pytest.raises(ValueError, match=r"^x: has %d columns; input layer 'Input' has %d units"
                       % (units + 1, units)):
        model.predict(np.zeros((2, units + 1), np.float32))
    with pytest.raises(ValueError, match=r"^x: expected a 1-D or 2-D array; got 3 dimensions"):
        model.predict(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(TypeError, match=r"^x: expected a numpy.ndarray or "
                                        r"scipy.sparse.csr_matrix; got <class 'list'>"):
        model.predict([[1.0, 2.0]])
    bad = sp.csr_matrix((np.ones(1, np.float32), np.array([-1]), np.array([0, 1])),
                        shape=(1, x.shape[1]))
    with pytest.raises(ValueError, match=r"^x.indices: entry 0 is -1; must be in \[0, \d+\)"):
        model.predict(bad)
    with pytest.raises(ValueError, match=r"^x.indptr: has 3 entries; expected rows \+ 1 = 2"):
        bad = x[:1].copy()
        bad.indptr = np.array([0, 1, 1])
        model.predict(bad)


def test_bad_k_exclude_layer(model, x):
    units = model.layer("Output").units
    with pytest.raises(ValueError, match=rf"^k: must be between 1 and {units} .*got 0"):
        model.predict(x, k=0)
    with pytest.raises(ValueError, match=rf"^k: must be between 1 and {units}"):
        model.predict(x, k=units + 1)
    with pytest.raises(TypeError, match=r"^k: expected an int or None"):
        model.predict(x, k="ten")
    with pytest.raises(ValueError, match=r"^exclude: has 2 rows; x has \d+"):
        model.predict(x, exclude=[[1], [2]])
    with pytest.raises(ValueError, match=r"^exclude: scipy.sparse matrices must be in CSR"):
        model.predict(x, exclude=x.tocsc())
    with pytest.raises(TypeError, match=r"^exclude: expected None, a scipy.sparse.csr_matrix"):
        model.predict(x, exclude="all")
    with pytest.raises(ValueError, match=r"^exclude\[0\]: entry 0 is \d+; must be in"):
        model.predict(x[:1], exclude=[[units]])
    with pytest.raises(ValueError, match=r"^exclude: only applies to top-K"):
        model.predict(x, k=None, exclude=x)
    with pytest.raises(ValueError, match=r"^no layer named 'Hiden' \(did you mean 'Hidden'\?\)"):
        model.outputs(x, layer="Hiden")
    with pytest.raises(ValueError, match=r"layer 'Input' is a sparse input layer"):
        model.outputs(x, layer="Input")
    with pytest.raises(TypeError, match=r"^layer: expected a layer name"):
        model.outputs(x, layer=3)


def test_bad_weights(model):
    with pytest.raises(ValueError, match=r"^no weight named 'Hidden<-Input:weight' \(did you "
                                         r"mean 'Hidden<-Input:weights'\?\)"):
        model.get_weights("Hidden<-Input:weight")
    w = model.get_weights("Output<-Hidden:bias")
    with pytest.raises(ValueError, match=r"^values: weight 'Output<-Hidden:bias' has shape "
                                         r"\(\d+,\); got \(3,\)"):
        model.set_weights("Output<-Hidden:bias", np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"^values: expected float32; got float64"):
        model.set_weights("Output<-Hidden:bias", w.astype(np.float64))
    with pytest.raises(TypeError, match=r"^values: expected a numpy.ndarray"):
        model.set_weights("Output<-Hidden:bias", list(w))


def test_bad_model_arguments(work, x, tmp_path):
    with pytest.raises(ValueError, match=r"^backend: expected 'cpu', 'cuda' or 'auto'; got 'gpu'"):
        nnsuite.Model.load(work / "net.nc", backend="gpu")
    with pytest.raises(ValueError, match=r"^threads: must be 0"):
        nnsuite.Model.load(work / "net.nc", threads=-1)
    with pytest.raises(OSError, match=r"missing\.nc: cannot open network file"):
        nnsuite.Model.load(tmp_path / "missing.nc")
    with pytest.raises(ValueError, match=r"needs dataset 'output', which was not loaded"):
        nnsuite.Model.from_json(str(work / "network.json"), datasets={"input": x})
    with pytest.raises(ValueError, match=r"^datasets\['input'\]: unknown key 'sparce'"):
        nnsuite.Model.from_json(str(work / "network.json"),
                                datasets={"input": {"shape": 5, "sparce": True}})
    with pytest.raises(TypeError, match=r"^json: expected a path, JSON text or a dict"):
        nnsuite.Model.from_json(42)


def test_bad_training_arguments(work, x):
    model = nnsuite.Model.from_json(str(work / "network.json"), datasets={"input": x, "output": x})
    with pytest.raises(ValueError, match=r"^optimizer: unknown optimizer 'adamw'; expected one of"):
        nnsuite.Trainer(model, {"input": x, "output": x}, optimizer="adamw")
    with pytest.raises(ValueError, match=r"^epochs: must be positive"):
        nnsuite.Trainer(model, {"input": x, "output": x}, epochs=0)
    with pytest.raises(ValueError, match=r"dataset 'output' not found"):
        nnsuite.Trainer(model, {"input": x})
    with pytest.raises(ValueError, match=r"dataset 'input' is dense but input layer 'Input' was "
                                         r"built for sparse data"):
        nnsuite.Trainer(model, {"input": x.toarray(), "output": x})
    with pytest.raises(ValueError, match=r"^data\['input'\]: scipy.sparse matrices must be in CSR"):
        nnsuite.Trainer(model, {"input": x.tocoo(), "output": x})
    with pytest.raises(ValueError, match=r"Command is Predict; train_cdl runs Train"):
        (work / "predict.cdl").write_text(
            '{"Version": 0.9, "Network": "net.nc", "Command": "Predict", "Data": "input.nc"}')
        nnsuite.train(work / "predict.cdl")

    def boom(stats):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        nnsuite.Trainer(model, {"input": x, "output": x}, epochs=3).run(callback=boom)
