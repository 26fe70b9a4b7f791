"""ai.onnx.ml ops (frontend/onnx/converters/ml.py) against onnxruntime:
LabelEncoder between strings and numbers, Binarizer, ArrayFeatureExtractor;
numeric ones compile (no interpreter fallback), string ones interpret."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as oh  # noqa: E402

from tvmd.frontend import onnx_backend  # noqa: E402


def model(node, inputs, outputs, ml_opset=4):
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                      [oh.make_tensor_value_info(n, t, s) for n, t, s in outputs])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 21), oh.make_opsetid("ai.onnx.ml", ml_opset)])


def check(m, *xs, compiled=None):
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {
        i.name: x for i, x in zip(m.graph.input, xs)})
    for mode in ("compiled", "interpreter"):
        got = onnx_backend.prepare(m, mode=mode).run(list(xs))
        for g, w in zip(got, want):
            assert g.shape == w.shape
            if w.dtype == object:
                assert list(g.reshape(-1)) == list(w.reshape(-1))
            else:
                np.testing.assert_array_equal(g, w)


def test_label_encoder_strings_to_numbers_and_back():
    to_int = oh.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["cat", "dog", "eel"],
                          values_int64s=[7, 3, 9], default_int64=-5)
    check(model(to_int, [("x", TP.STRING, [2, 3])], [("y", TP.INT64, [2, 3])]),
          np.array([["dog", "cat", "yak"], ["eel", "eel", ""]], dtype=object))
    to_str = oh.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_int64s=[1, 2],
                          values_strings=["one", "two"], default_string="many")
    check(model(to_str, [("x", TP.INT64, [5])], [("y", TP.STRING, [5])]), np.array([2, 1, 7, 2, -1], np.int64))


def test_numeric_label_encoder_binarizer_and_feature_extractor_compile(capfd):
    enc = oh.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_floats=[0.5, 1.5, -2.0],
                       values_floats=[10.0, 20.0, 30.0], default_float=-1.0)
    check(model(enc, [("x", TP.FLOAT, [6])], [("y", TP.FLOAT, [6])]),
          np.array([1.5, 0.5, 3.0, -2.0, 0.0, 1.5], np.float32))
    binz = oh.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.25)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    check(model(binz, [("x", TP.FLOAT, [3, 4])], [("y", TP.FLOAT, [3, 4])], ml_opset=1), x)
    afe = oh.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
    check(model(afe, [("x", TP.FLOAT, [3, 4]), ("i", TP.INT64, [3])], [("y", TP.FLOAT, [3, 3])], ml_opset=1),
          x, np.array([3, 0, 3], np.int64))
    assert "interpreter" not in capfd.readouterr().err   # all of it compiled


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tfidf_vectorizer_with_skips_over_integers_and_strings(mode):
    rng = np.random.default_rng(1)
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]          # four 1-grams, three 2-grams
    common = dict(mode=mode, min_gram_length=1, max_gram_length=2, max_skip_count=2, ngram_counts=[0, 4],
                  ngram_indexes=[6, 1, 0, 3, 2, 5, 4], weights=[0.5, 2.0, 1.0, 3.0, 0.25, 1.5, 4.0])
    ints = oh.make_node("TfIdfVectorizer", ["x"], ["y"], pool_int64s=pool, **common)
    check(model(ints, [("x", TP.INT32, [3, 12])], [("y", TP.FLOAT, [3, 7])]),
          rng.integers(2, 9, (3, 12)).astype(np.int32))
    words = [str(v) for v in pool]
    strs = oh.make_node("TfIdfVectorizer", ["x"], ["y"], pool_strings=words, **common)
    check(model(strs, [("x", TP.STRING, [12])], [("y", TP.FLOAT, [7])]),
          np.array([str(v) for v in rng.integers(2, 9, 12)], dtype=object))
