"""String tensors (element type ``string``): where a numeric pipeline meets text.

    %c = strings.concat(%a, %b)                 elementwise a + b, broadcast (ONNX StringConcat)
    %m = strings.regex_full_match(%x) {pattern = "..."}
                                                i1: the whole string matches (Python's re)
    %n = strings.normalize(%x) {case_change_action = "LOWER", is_case_sensitive = false,
                                stopwords = ["a", "the"]}
                                                ONNX StringNormalizer: x [C] or [1, C] without
                                                the stopwords, case changed; all removed: [""]
    %s = strings.split(%x) {delimiter = ",", maxsplit = 2}
                                                tuple<substrings x.shape + [?] padded with "",
                                                counts x.shape (i64)> (ONNX StringSplit); no
                                                delimiter: runs of whitespace, empty pieces dropped

Values are numpy object arrays of ``str``; nothing compiles them (no TE
compute), so a function that holds a string tensor runs in the relay
interpreter, and a build says so once.  ``equal`` / ``not_equal`` compare
strings too.  Patterns: opaque.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import BOOL, INT, STR, STRS, enum, optional
from ....ir.core import Attr
from ....ir.lazy import lazy_module
from .base import OpPattern, RelayOp, broadcast_shapes, tensor_type

np = lazy_module("numpy")


def string_tensor(op, t, what="operand"):
    tensor_type(op, t, what)
    if t.element_type is not T.string:
        raise op.error(f"expects a string tensor {what}, got {t}")
    return t


def _strings(shape, values):
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = values if len(values) else []
    return out


class StringConcatOp(RelayOp):
    __slots__ = ()
    name = "relay.strings.concat"
    OPERANDS = ("lhs", "rhs")
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, a, b):
        string_tensor(self, a, "lhs")
        string_tensor(self, b, "rhs")
        return T.TensorType(broadcast_shapes(self, a.shape, b.shape), T.string)

    def compute(self, a, b):
        return np.asarray(np.frompyfunc(lambda x, y: x + y, 2, 1)(a, b), dtype=object)


class RegexFullMatchOp(RelayOp):
    __slots__ = ()
    name = "relay.strings.regex_full_match"
    OPERANDS = ("data",)
    ATTRS = {"pattern": Attr(STR)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        import re
        string_tensor(self, x)
        try:
            re.compile(self.attributes["pattern"])
        except re.error as e:
            raise self.error(f"pattern is not a regular expression: {e}") from None
        return x.with_element(T.i1)

    def compute(self, x):
        import re
        r = re.compile(self.attributes["pattern"])
        return np.asarray(np.frompyfunc(lambda s: r.fullmatch(s) is not None, 1, 1)(x), dtype=bool)


class StringNormalizeOp(RelayOp):
    __slots__ = ()
    name = "relay.strings.normalize"
    OPERANDS = ("data",)
    ATTRS = {"case_change_action": Attr(enum("NONE", "LOWER", "UPPER"), "NONE"),
             "is_case_sensitive": Attr(BOOL, False), "stopwords": Attr(STRS, ())}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        string_tensor(self, x)
        if x.rank == 1:
            return T.TensorType((None,), T.string)
        if x.rank == 2 and x.shape[0] == 1:
            return T.TensorType((1, None), T.string)
        raise self.error(f"expects a tensor [C] or [1, C], got {x}")

    def compute(self, x):
        a = self.attributes
        words = list(x.reshape(-1))
        stop = set(a["stopwords"])
        if a["is_case_sensitive"]:
            words = [w for w in words if w not in stop]
        else:
            low = {s.lower() for s in stop}
            words = [w for w in words if w.lower() not in low]
        action = a["case_change_action"]
        if action == "LOWER":
            words = [w.lower() for w in words]
        elif action == "UPPER":
            words = [w.upper() for w in words]
        if not words:
            words = [""]
        return _strings((len(words),) if x.ndim == 1 else (1, len(words)), words)


class StringSplitOp(RelayOp):
    __slots__ = ()
    name = "relay.strings.split"
    OPERANDS = ("data",)
    ATTRS = {"delimiter": Attr(optional(STR), None), "maxsplit": Attr(optional(INT), None)}
    PATTERN = OpPattern.OPAQUE

    def type_relation(self, x):
        string_tensor(self, x)
        if self.attributes["delimiter"] == "":
            raise self.error("delimiter is empty: leave it out to split on whitespace")
        return T.TupleType((T.TensorType(tuple(x.shape) + (None,), T.string), x.with_element(T.i64)))

    def compute(self, x):
        delim, maxsplit = self.attributes["delimiter"], self.attributes["maxsplit"]
        n = -1 if maxsplit is None else maxsplit
        pieces = [s.split(delim, n) if delim is not None else s.split(None, n) for s in x.reshape(-1)]
        width = max((len(p) for p in pieces), default=0)
        out = np.full((len(pieces), width), "", dtype=object)
        for i, p in enumerate(pieces):
            out[i, :len(p)] = p
        counts = np.array([len(p) for p in pieces], np.int64).reshape(x.shape)
        return out.reshape(tuple(x.shape) + (width,)), counts
