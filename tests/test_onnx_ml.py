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


def random_forest(rng, n_trees, depth, n_features, n_targets, member=False):
    """Full binary trees of `depth` levels: node attributes and leaves, ONNX's TreeEnsemble encoding."""
    a = {k: [] for k in ("nodes_featureids", "nodes_modes", "nodes_splits", "nodes_truenodeids",
                         "nodes_trueleafs", "nodes_falsenodeids", "nodes_falseleafs",
                         "nodes_missing_value_tracks_true")}
    leaves_t, leaves_w, roots, members = [], [], [], []

    def grow(level):
        k = len(a["nodes_featureids"])
        mode = 6 if member and rng.random() < 0.3 else int(rng.integers(0, 6))
        a["nodes_featureids"].append(int(rng.integers(n_features)))
        a["nodes_modes"].append(mode)
        a["nodes_splits"].append(float(np.round(rng.standard_normal(), 1)))
        a["nodes_missing_value_tracks_true"].append(int(rng.integers(2)))
        if mode == 6:
            # each set ends with a NaN, as onnx's reference reads them; integers, as onnxruntime takes
            # them; no 0, which the reference's reader takes for an end
            members.extend([float(v) for v in rng.choice([-2, -1, 1, 2, 3], 3)] + [float("nan")])
        for side in ("true", "false"):
            a[f"nodes_{side}nodeids"].append(0)
            a[f"nodes_{side}leafs"].append(0)
        for side in ("true", "false"):
            if level + 1 == depth:
                a[f"nodes_{side}leafs"][k] = 1
                a[f"nodes_{side}nodeids"][k] = len(leaves_w)
                leaves_t.append(int(rng.integers(n_targets)))
                leaves_w.append(float(np.round(rng.standard_normal(), 2)))
            else:
                a[f"nodes_{side}nodeids"][k] = grow(level + 1)
        return k

    for _ in range(n_trees):
        roots.append(grow(0))
    return a, roots, leaves_t, leaves_w, members


def forest_model(rng, agg, post, member):
    from onnx import numpy_helper
    a, roots, lt, lw, members = random_forest(rng, 4, 3, 5, 3, member)
    tensors = {"nodes_modes": numpy_helper.from_array(np.array(a.pop("nodes_modes"), np.uint8)),
               "nodes_splits": numpy_helper.from_array(np.array(a.pop("nodes_splits"), np.float32)),
               "leaf_weights": numpy_helper.from_array(np.array(lw, np.float32))}
    if members:
        tensors["membership_values"] = numpy_helper.from_array(np.array(members, np.float32))
    node = oh.make_node("TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", n_targets=3, tree_roots=roots,
                        leaf_targetids=lt, aggregate_function=agg, post_transform=post, **a, **tensors)
    return model(node, [("x", TP.FLOAT, [16, 5])], [("y", TP.FLOAT, [16, 3])], ml_opset=5)


def features(rng):
    x = rng.choice([-2.0, -1.0, 1.0, 2.0, 3.0, 0.5, -1.5], (16, 5)).astype(np.float32)
    x[3, 2] = x[7, 0] = np.nan
    return x


@pytest.mark.parametrize("agg", [0, 1, 2, 3])     # AVERAGE SUM MIN MAX
def test_tree_ensemble_aggregates_as_onnxruntime(agg):
    rng = np.random.default_rng(agg)
    m, x = forest_model(rng, agg, 0, False), features(rng)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for mode in ("compiled", "interpreter"):
        np.testing.assert_allclose(onnx_backend.prepare(m, mode=mode).run([x])[0], want, rtol=1e-5, atol=1e-6)


def test_tree_ensemble_set_membership_as_the_reference():
    """onnx's reference evaluator: onnxruntime reads membership sets otherwise (it differs from the reference)."""
    from onnx.reference import ReferenceEvaluator
    rng = np.random.default_rng(7)
    m, x = forest_model(rng, 1, 0, True), features(rng)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    np.testing.assert_allclose(onnx_backend.prepare(m).run([x])[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("post", [1, 2, 3])      # SOFTMAX LOGISTIC SOFTMAX_ZERO, on onnxruntime's raw scores
def test_tree_ensemble_post_transforms(post):
    rng = np.random.default_rng(11)
    x = features(np.random.default_rng(12))
    raw = ort.InferenceSession(forest_model(rng, 1, 0, False).SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0].astype(np.float64)
    if post == 2:
        want = 1 / (1 + np.exp(-raw))
    else:
        e = np.exp(raw - raw.max(axis=1, keepdims=True))
        if post == 3:
            e = np.where(raw == 0, 0.0, e)
        want = e / e.sum(axis=1, keepdims=True)
    got = onnx_backend.prepare(forest_model(np.random.default_rng(11), 1, post, False)).run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
