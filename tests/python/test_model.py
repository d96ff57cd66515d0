# Model: loading, layers, weights read/write round trips, save/load, from_json.
import numpy as np
import pytest

import nnsuite


def test_layers_and_weights(work):
    m = nnsuite.Model.load(work / "net.nc")
    assert [l.name for l in m.layers] == ["Input", "Hidden", "Output"]
    assert m.input_layers == ["Input"] and m.output_layers == ["Output"]
    assert m.layer("Input").sparse_input
    assert m.layer("Hidden").units == 8
    names = [w.name for w in m.weights]
    assert "Hidden<-Input:weights" in names and "Output<-Hidden:bias" in names
    w = m.get_weights("Hidden<-Input:weights")
    assert w.dtype == np.float32 and w.shape == (m.layer("Input").units, 8)


def test_weight_round_trip_through_a_file(work, tmp_path):
    m = nnsuite.Model.load(work / "net.nc")
    rng = np.random.default_rng(1)
    new = {}
    for w in m.weights:
        new[w.name] = rng.standard_normal(w.shape).astype(np.float32)
        m.set_weights(w.name, new[w.name])
        np.testing.assert_array_equal(m.get_weights(w.name), new[w.name])
    m.save(tmp_path / "copy.nc")
    again = nnsuite.Model.load(tmp_path / "copy.nc")
    for name, values in new.items():
        np.testing.assert_array_equal(again.get_weights(name), values)


def test_set_weights_changes_predictions(work):
    m = nnsuite.Model.load(work / "net.nc")
    x = np.zeros((1, m.layer("Input").units), np.float32)
    before = m.outputs(x)
    b = m.get_weights("Output<-Hidden:bias")
    m.set_weights("Output<-Hidden:bias", b + 1.0)
    assert not np.array_equal(before, m.outputs(x))


def test_from_json_with_shapes(work):
    data = nnsuite.read_datasets(work / "input.nc")
    x = data["input"]
    m = nnsuite.Model.from_json(str(work / "network.json"),
                                datasets={"input": x, "output": {"shape": x.shape[1]}}, seed=3)
    assert m.layer("Input").units == x.shape[1]
    assert m.layer("Input").sparse_input
    # The same seed initialises the same weights; another seed does not.
    same = nnsuite.Model.from_json((work / "network.json").read_text(),
                                   datasets={"input": x, "output": x}, seed=3)
    other = nnsuite.Model.from_json(str(work / "network.json"),
                                    datasets={"input": x, "output": x}, seed=4)
    w = "Hidden<-Input:weights"
    np.testing.assert_array_equal(m.get_weights(w), same.get_weights(w))
    assert not np.array_equal(m.get_weights(w), other.get_weights(w))


def test_bf16_precision(work):
    """precision="bf16": BF16 products with FP32 accumulation, within BF16's rounding of FP32;
    refused with the reason on a CPU without AVX512-BF16 (skipped there)."""
    fp32 = nnsuite.Model.load(work / "net.nc")
    try:
        bf16 = nnsuite.Model.load(work / "net.nc", precision="bf16")
    except Exception as e:  # the library's ConfigError
        if "BF16" in str(e) and "avx512" in str(e).lower():
            pytest.skip(str(e))
        raise
    data = nnsuite.read_datasets(work / "input.nc")["input"]
    a, b = fp32.outputs(data), bf16.outputs(data)
    assert a.shape == b.shape
    assert not np.array_equal(a, b)  # BF16 products round differently
    np.testing.assert_allclose(b, a, rtol=0.03, atol=0.01)
    with pytest.raises(ValueError, match=r"^precision: expected 'fp32' or 'bf16'; got 'fp16'"):
        nnsuite.Model.load(work / "net.nc", precision="fp16")
