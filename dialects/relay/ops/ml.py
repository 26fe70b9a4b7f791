"""Classic ML operators (ONNX's ai.onnx.ml) that no other op composes:
ml.tfidf_vectorizer, ml.tree_ensemble (its docstring has the encoding).

    %y = ml.tfidf_vectorizer(%x) {mode = "TF", min_gram_length = 1, max_gram_length = 2,
                                  max_skip_count = 0, ngram_counts = [0, 4],
                                  ngram_indexes = [...], pool_int64s = [...] | pool_strings = [...],
                                  weights = [...]}
                                 x [C] or [N, C] (integers or strings); y f32 [K] or [N, K],
                                 K = max(ngram_indexes) + 1

The pool lists the n-grams, 1-grams first: ``ngram_counts[k]`` is where
the (k+1)-grams start (each k+1 items).  The i-th n-gram of the pool is
counted into ``y[ngram_indexes[i]]``.  In each row, for every length n in
[min, max] and every skip s in [0, max_skip_count], the n items at
positions p, p + (s+1), ..., p + (n-1)(s+1) form an n-gram (a 1-gram once
per position, whatever the skip).  mode TF: the counts; IDF: 1 where
counted, times ``weights[i]``; TFIDF: the counts times ``weights[i]``
(weights default to 1).  Numpy: no TE compute.  Pattern: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import FLOATS, INT, INTS, STRS, enum
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, tensor_type

np = lazy_module("numpy")


class TfIdfVectorizerOp(RelayOp):
    __slots__ = ()
    name = "relay.ml.tfidf_vectorizer"
    OPERANDS = ("data",)
    ATTRS = {"mode": Attr(enum("TF", "IDF", "TFIDF"), "TF"), "min_gram_length": Attr(INT, 1),
             "max_gram_length": Attr(INT, 1), "max_skip_count": Attr(INT, 0), "ngram_counts": Attr(INTS, ()),
             "ngram_indexes": Attr(INTS, ()), "pool_int64s": Attr(INTS, ()), "pool_strings": Attr(STRS, ()),
             "weights": Attr(FLOATS, ())}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        tensor_type(self, x)
        a = self.attributes
        strings = bool(a["pool_strings"])
        if strings == bool(a["pool_int64s"]):
            raise self.error("needs exactly one of pool_int64s and pool_strings")
        if strings != (x.element_type is T.string) or not (strings or isinstance(x.element_type, T.IntegerType)):
            raise self.error(f"takes {'strings' if strings else 'integers'} for its pool, got {x}")
        if x.rank not in (1, 2):
            raise self.error(f"expects [C] or [N, C], got {x}")
        if not 1 <= a["min_gram_length"] <= a["max_gram_length"] or a["max_skip_count"] < 0:
            raise self.error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0")
        grams = self.pool()
        if len(a["ngram_indexes"]) != len(grams) or (a["weights"] and len(a["weights"]) != len(grams)):
            raise self.error(f"the pool holds {len(grams)} n-gram(s): ngram_indexes (and weights) "
                             f"list one entry each, got {len(a['ngram_indexes'])}")
        k = max(a["ngram_indexes"], default=-1) + 1
        return T.TensorType((k,) if x.rank == 1 else (x.shape[0], k), T.f32)

    def pool(self):
        """The pool's n-grams as tuples, in order."""
        a = self.attributes
        items = list(a["pool_strings"] or a["pool_int64s"])
        starts = list(a["ngram_counts"]) + [len(items)]
        grams = []
        for n, (lo, hi) in enumerate(zip(starts, starts[1:]), start=1):
            if hi < lo or (hi - lo) % n:
                raise self.error(f"ngram_counts {list(a['ngram_counts'])} does not cut the pool "
                                 f"into whole {n}-grams")
            grams += [tuple(items[i:i + n]) for i in range(lo, hi, n)]
        return grams

    def compute(self, x):
        a = self.attributes
        where = {}
        for i, g in enumerate(self.pool()):
            where.setdefault(g, []).append(i)
        idx = list(a["ngram_indexes"])
        k = max(idx, default=-1) + 1
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        counts = np.zeros((rows.shape[0], len(idx)), np.float64)
        for r, row in enumerate(rows):
            row = [v if isinstance(v, str) else int(v) for v in row]
            for n in range(a["min_gram_length"], a["max_gram_length"] + 1):
                for skip in range(a["max_skip_count"] + 1 if n > 1 else 1):
                    step = skip + 1
                    for p in range(len(row) - (n - 1) * step):
                        for i in where.get(tuple(row[p:p + (n - 1) * step + 1:step]), ()):
                            counts[r, i] += 1
        w = np.asarray(a["weights"] or [1.0] * len(idx), np.float64)
        if a["mode"] == "IDF":
            counts = np.minimum(counts, 1) * w
        elif a["mode"] == "TFIDF":
            counts = counts * w
        y = np.zeros((rows.shape[0], k), np.float64)
        for i, j in enumerate(idx):
            y[:, j] += counts[:, i]
        y = y.astype(np.float32)
        return y.reshape(k) if x.ndim == 1 else y


class TreeEnsembleOp(RelayOp):
    """``ml.tree_ensemble(%x) {...}``: ONNX ai.onnx.ml TreeEnsemble (v5).

    x [N, F] floats; y [N, n_targets].  Each tree starts at its root in
    ``tree_roots``; an interior node k compares feature
    ``nodes_featureids[k]`` by ``nodes_modes[k]`` (0 <=, 1 <, 2 >=, 3 >,
    4 ==, 5 !=, against ``nodes_splits[k]``; 6: member of the k-th set of
    ``membership_values``, sets split by NaN) and goes to its true or false
    child (a node, or a leaf where ``nodes_trueleafs`` / ``nodes_falseleafs``
    say so); a NaN feature goes true where ``nodes_missing_value_tracks_true``
    says so, else as the comparison gives (only != holds for NaN).  The leaf adds ``leaf_weights`` to target ``leaf_targetids``:
    summed over the trees (SUM), averaged, or the MIN / MAX; then
    ``post_transform`` (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT)."""
    __slots__ = ()
    name = "relay.ml.tree_ensemble"
    OPERANDS = ("data",)
    ATTRS = {"n_targets": Attr(INT), "tree_roots": Attr(INTS), "nodes_featureids": Attr(INTS),
             "nodes_modes": Attr(INTS), "nodes_splits": Attr(FLOATS, ()), "nodes_truenodeids": Attr(INTS),
             "nodes_trueleafs": Attr(INTS), "nodes_falsenodeids": Attr(INTS), "nodes_falseleafs": Attr(INTS),
             "nodes_missing_value_tracks_true": Attr(INTS, ()), "membership_values": Attr(FLOATS, ()),
             "leaf_targetids": Attr(INTS), "leaf_weights": Attr(FLOATS),
             "aggregate_function": Attr(enum("AVERAGE", "SUM", "MIN", "MAX"), "SUM"),
             "post_transform": Attr(enum("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"), "NONE")}
    PATTERN = OpPattern.OPAQUE

    _NODE_ATTRS = ("nodes_featureids", "nodes_modes", "nodes_truenodeids", "nodes_trueleafs",
                   "nodes_falsenodeids", "nodes_falseleafs")

    def type_relation(self, x):
        tensor_type(self, x)
        a = self.attributes
        if x.rank != 2 or not T.is_float(x.element_type):
            raise self.error(f"expects float features [N, F], got {x}")
        n = len(a["nodes_featureids"])
        if any(len(a[k]) != n for k in self._NODE_ATTRS) or \
                (a["nodes_splits"] and len(a["nodes_splits"]) != n) or \
                (a["nodes_missing_value_tracks_true"] and len(a["nodes_missing_value_tracks_true"]) != n):
            raise self.error(f"the nodes_* attributes must all list {n} nodes")
        leaves = len(a["leaf_weights"])
        if len(a["leaf_targetids"]) != leaves or not all(0 <= t < a["n_targets"] for t in a["leaf_targetids"]):
            raise self.error("leaf_targetids and leaf_weights list the same leaves, targets in [0, n_targets)")
        for k in range(n):
            for leaf, ids in ((a["nodes_trueleafs"][k], "nodes_truenodeids"),
                              (a["nodes_falseleafs"][k], "nodes_falsenodeids")):
                if not 0 <= a[ids][k] < (leaves if leaf else n):
                    raise self.error(f"node {k}: {ids} {a[ids][k]} is no {'leaf' if leaf else 'node'}")
        if not all(0 <= r < n for r in a["tree_roots"]) or any(not 0 <= m <= 6 for m in a["nodes_modes"]):
            raise self.error("tree_roots must index nodes, nodes_modes be 0..6")
        return T.TensorType((x.shape[0], a["n_targets"]), x.element_type)

    def compute(self, x):
        a = self.attributes
        feats = np.asarray(a["nodes_featureids"])
        modes = np.asarray(a["nodes_modes"])
        splits = np.asarray(a["nodes_splits"] or [0.0] * len(feats), np.float64)
        nan_true = np.asarray(a["nodes_missing_value_tracks_true"] or [0] * len(feats), bool)
        true_id, true_leaf = np.asarray(a["nodes_truenodeids"]), np.asarray(a["nodes_trueleafs"], bool)
        false_id, false_leaf = np.asarray(a["nodes_falsenodeids"]), np.asarray(a["nodes_falseleafs"], bool)
        sets, cur = [], []
        for v in a["membership_values"]:
            if np.isnan(v):
                sets.append(cur)
                cur = []
            else:
                cur.append(v)
        sets.append(cur)
        member_set = {}
        for k in np.flatnonzero(modes == 6):
            member_set[k] = np.asarray(sets[len(member_set)] if len(member_set) < len(sets) else [])
        xv = x.astype(np.float64)
        n = xv.shape[0]
        targets, weights = np.asarray(a["leaf_targetids"]), np.asarray(a["leaf_weights"], np.float64)
        per_tree = []
        for root in a["tree_roots"]:
            node = np.full(n, root)
            leaf = np.full(n, -1)
            while (leaf < 0).any():
                live = np.flatnonzero(leaf < 0)
                k = node[live]
                f = xv[live, feats[k]]
                s = splits[k]
                go = np.select([modes[k] == 0, modes[k] == 1, modes[k] == 2, modes[k] == 3, modes[k] == 4,
                                modes[k] == 5], [f <= s, f < s, f >= s, f > s, f == s, f != s], False)
                for m in np.flatnonzero(modes[k] == 6):
                    go[m] = f[m] in member_set[k[m]]
                go = go | (np.isnan(f) & nan_true[k])
                nxt = np.where(go, true_id[k], false_id[k])
                is_leaf = np.where(go, true_leaf[k], false_leaf[k])
                leaf[live[is_leaf]] = nxt[is_leaf]
                node[live[~is_leaf]] = nxt[~is_leaf]
            contrib = np.full((n, a["n_targets"]), np.nan)
            for t in range(a["n_targets"]):
                hit = targets[leaf] == t
                contrib[hit, t] = weights[leaf[hit]]
            per_tree.append(contrib)
        scores = np.stack(per_tree)                                   # (trees, n, targets); NaN: no leaf there
        agg = a["aggregate_function"]
        if agg == "SUM":
            y = np.nansum(scores, axis=0)
        elif agg == "AVERAGE":
            y = np.nansum(scores, axis=0) / len(per_tree)
        else:
            with np.errstate(all="ignore"):
                y = (np.nanmin if agg == "MIN" else np.nanmax)(np.where(np.isnan(scores).all(0), 0.0, scores), 0) \
                    if scores.size else np.zeros((n, a["n_targets"]))
        return _post_transform(y, a["post_transform"]).astype(x.dtype)


def _post_transform(y, how):
    if how == "LOGISTIC":
        return 1 / (1 + np.exp(-y))
    if how in ("SOFTMAX", "SOFTMAX_ZERO"):
        e = np.exp(y - y.max(axis=1, keepdims=True))
        if how == "SOFTMAX_ZERO":
            e = np.where(y == 0, 0.0, e)
        total = e.sum(axis=1, keepdims=True)
        return e / np.where(total == 0, 1.0, total)
    if how == "PROBIT":
        return np.sqrt(2) * _erfinv(2 * y - 1)
    return y


def _erfinv(v):
    """The inverse error function: Newton's method on math.erf, from the
    start sign(v) sqrt(-log(1 - v^2)) (numpy has no erfinv)."""
    from math import erf, pi, sqrt
    v = np.clip(np.asarray(v, np.float64), -1 + 1e-15, 1 - 1e-15)
    x = np.sign(v) * np.sqrt(-np.log((1 - v) * (1 + v))) * 0.8
    erf_v = np.vectorize(erf)
    for _ in range(50):
        x = x - (erf_v(x) - v) / (2 / sqrt(pi) * np.exp(-x * x))
    return x
