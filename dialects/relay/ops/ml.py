"""Classic ML operators (ONNX's ai.onnx.ml) that no other op composes.

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
