"""ai.onnx.ml: LabelEncoder, Binarizer, ArrayFeatureExtractor, as relay ops
that already exist (numbers compile; a string key or value keeps the model
in the interpreter, as every string tensor does); TfIdfVectorizer (ONNX
domain) and TreeEnsemble as relay's ml.tfidf_vectorizer and
ml.tree_ensemble.

LabelEncoder maps each element through (keys, values), `default` for an
element that is no key:

    eq    = equal(expand_dims(x, -1), keys)          [..., K]
    found = max(cast(eq, i32), -1) > 0
    y     = where(found, take(values, argmax(eq)), default)
"""

from __future__ import annotations

import numpy as np

from ....ir import types as T
from ..registry import converter

DOMAIN = "ai.onnx.ml"


def _tensor_attr(cx, node, name):
    t = node.attr(name)
    if t is None:
        return None
    from ..dtypes import tensor_to_numpy
    return np.asarray(tensor_to_numpy(t, cx.error))


def _listed(cx, node, stem):
    """The ``{stem}_strings / _int64s / _floats / _tensor`` attribute given, as an array."""
    for suffix, dt in (("strings", object), ("int64s", np.int64), ("floats", np.float32)):
        v = node.attr(f"{stem}_{suffix}")
        if v:
            return np.array(list(v), dtype=dt)
    return _tensor_attr(cx, node, f"{stem}_tensor")


@converter("LabelEncoder", 1, domain=DOMAIN)
def label_encoder(cx, node):
    x = node.input(0)
    if node.version < 2:     # classes_strings: strings <-> their index
        classes = np.array(list(node.attr("classes_strings") or ()), dtype=object)
        index = np.arange(len(classes), dtype=np.int64)
        if cx.dtype(x) is T.string:
            keys, values, default = classes, index, np.int64(node.attr("default_int64", -1))
        else:
            keys, values, default = index, classes, node.attr("default_string", "_Unused")
    else:
        keys, values = _listed(cx, node, "keys"), _listed(cx, node, "values")
        if keys is None or values is None or keys.size != values.size:
            raise cx.error("needs keys and values of one length")
        default = _tensor_attr(cx, node, "default_tensor")
        if default is None:
            default = {object: node.attr("default_string", "_Unused"),
                       np.dtype(np.int64): node.attr("default_int64", -1),
                       np.dtype(np.float32): node.attr("default_float", -0.0)}.get(
                           values.dtype if values.dtype != object else object)
        default = np.asarray(default, dtype=values.dtype).reshape(())
    keys_v = cx.const(keys.astype(T.to_numpy_dtype(cx.dtype(x))) if keys.dtype != object else keys)
    eq = cx.op("equal", cx.op("expand_dims", x, axis=-1, num_newaxis=1), keys_v)
    hits = cx.cast(eq, T.i32)
    found = cx.op("greater", cx.op("max", hits, axis=(-1,)), cx.const(0, T.i32))
    picked = cx.op("take", cx.const(values), cx.op("argmax", hits, axis=(-1,)), axis=0)
    return cx.op("where", found, picked, cx.const(default))


@converter("Binarizer", 1, domain=DOMAIN)
def binarizer(cx, node):
    """1 where x > threshold, else 0, in x's type."""
    x = node.input(0)
    above = cx.op("greater", x, cx.scalar(float(node.attr("threshold", 0.0)), x))
    return cx.cast(above, cx.dtype(x))


@converter("ArrayFeatureExtractor", 1, domain=DOMAIN)
def array_feature_extractor(cx, node):
    """x's elements at the indices along its last axis."""
    x, idx = node.input(0), node.input(1)
    return cx.op("take", x, cx.op("reshape", idx, newshape=(-1,)), axis=cx.rank(x) - 1)


@converter("TfIdfVectorizer", 9)
def tfidf_vectorizer(cx, node):
    return cx.op("ml.tfidf_vectorizer", node.input(0), mode=node.attr("mode", "TF"),
                 min_gram_length=node.attr("min_gram_length", 1), max_gram_length=node.attr("max_gram_length", 1),
                 max_skip_count=node.attr("max_skip_count", 0), ngram_counts=tuple(node.attr("ngram_counts") or ()),
                 ngram_indexes=tuple(node.attr("ngram_indexes") or ()),
                 pool_int64s=tuple(node.attr("pool_int64s") or ()),
                 pool_strings=tuple(node.attr("pool_strings") or ()),
                 weights=tuple(float(w) for w in node.attr("weights") or ()))


@converter("TreeEnsemble", 5, domain=DOMAIN)
def tree_ensemble(cx, node):
    """relay's ml.tree_ensemble; the tensor attributes become lists."""
    def listed(name, cast=float):
        t = _tensor_attr(cx, node, name)
        return () if t is None else tuple(cast(v) for v in t.reshape(-1))
    ints = ("tree_roots", "nodes_featureids", "nodes_truenodeids", "nodes_trueleafs", "nodes_falsenodeids",
            "nodes_falseleafs", "nodes_missing_value_tracks_true", "leaf_targetids")
    attrs = {k: tuple(int(v) for v in node.attr(k) or ()) for k in ints}
    attrs["nodes_modes"] = listed("nodes_modes", int)
    attrs["nodes_splits"] = listed("nodes_splits")
    attrs["leaf_weights"] = listed("leaf_weights")
    attrs["membership_values"] = listed("membership_values")
    aggregate = ("AVERAGE", "SUM", "MIN", "MAX")
    post = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
    agg, pt = node.attr("aggregate_function", 1), node.attr("post_transform", 0)
    if not 0 <= agg < len(aggregate) or not 0 <= pt < len(post):
        raise cx.error(f"aggregate_function {agg} / post_transform {pt} out of range")
    x = node.input(0)
    return cx.op("ml.tree_ensemble", x, n_targets=node.attr("n_targets"), aggregate_function=aggregate[agg],
                 post_transform=post[pt], **attrs)
