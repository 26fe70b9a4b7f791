"""Types.  Every type is interned: equal types are the same object.

Text forms (MLIR's)::

    i1 i8 i16 i32 i64     signless integers (i1 is a boolean)
    ui8 ui16 ui32 ui64    unsigned integers
    f16 bf16 f32 f64      floats
    f8E4M3FN f8E4M3FNUZ f8E5M2 f8E5M2FNUZ f4E2M1FN   8- and 4-bit floats (ir/minifloat.py)
    string                a Unicode string (ONNX's STRING; interpreted only)
    index                 loop and address arithmetic
    tensor<1x3x?xf32>     ranked tensor, ``?`` a dynamic dimension; ``tensor<f32>`` a scalar
    memref<64x64xf32>     a buffer; ``memref<64xf32, "shared">`` in a memory scope
    vector<16xf32>        a SIMD vector
    tuple<T1, T2>         a tuple
    (T1, T2) -> T3        a function
    ?                     not inferred yet (Relay's incomplete type)
    !dialect.name<...>    a dialect's own type
"""

from __future__ import annotations

import re


class Type:
    __slots__ = ("_text",)
    _cache: dict = {}

    def __str__(self):
        return self._text

    __repr__ = __str__

    # interned: identity is equality, and copies are the object itself
    def __reduce__(self):
        return (parse_type, (self._text,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def is_complete(self) -> bool:
        return True


def _interned(cls, key, init):
    cache = Type._cache
    k = (cls, key)
    t = cache.get(k)
    if t is None:
        t = object.__new__(cls)
        init(t)
        cache[k] = t
    return t


class IncompleteType(Type):
    """A type not inferred yet; ``--infer-type`` replaces it."""

    __slots__ = ()

    def __new__(cls):
        def init(t):
            t._text = "?"
        return _interned(cls, (), init)

    @property
    def is_complete(self):
        return False


class IndexType(Type):
    __slots__ = ()

    def __new__(cls):
        def init(t):
            t._text = "index"
        return _interned(cls, (), init)

    @property
    def bitwidth(self):
        return 64


class NoneType(Type):
    __slots__ = ()

    def __new__(cls):
        def init(t):
            t._text = "none"
        return _interned(cls, (), init)


class StringType(Type):
    """``string``: a Unicode string, ONNX's STRING element type (numpy
    object arrays of ``str``).  Tensors of it run in the relay interpreter:
    nothing compiles them."""
    __slots__ = ()

    def __new__(cls):
        def init(t):
            t._text = "string"
        return _interned(cls, (), init)


class IntegerType(Type):
    """Signless ``iN`` (read as signed, as MLIR and TVM do) or unsigned ``uiN``."""

    __slots__ = ("width", "unsigned")

    def __new__(cls, width: int, unsigned: bool = False):
        def init(t):
            t.width = width
            t.unsigned = unsigned
            t._text = f"{'ui' if unsigned else 'i'}{width}"
        return _interned(cls, (width, unsigned), init)

    @property
    def bitwidth(self):
        return self.width


class FloatType(Type):
    __slots__ = ("kind", "width")

    _WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64,
              "f8E4M3FN": 8, "f8E4M3FNUZ": 8, "f8E5M2": 8, "f8E5M2FNUZ": 8, "f4E2M1FN": 4}

    def __new__(cls, kind: str):
        if kind not in cls._WIDTH:
            raise ValueError(f"unknown float type {kind!r}")

        def init(t):
            t.kind = kind
            t.width = cls._WIDTH[kind]
            t._text = kind
        return _interned(cls, kind, init)

    @property
    def bitwidth(self):
        return self.width


def _dims_text(shape):
    return "".join(("?" if d is None else str(d)) + "x" for d in shape)


class ShapedType(Type):
    """Base of tensor, memref and vector types."""

    __slots__ = ("shape", "element_type")

    @property
    def rank(self):
        return len(self.shape)

    @property
    def is_static(self):
        return None not in self.shape

    def num_elements(self):
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    @property
    def dtype(self):
        return to_numpy_dtype(self.element_type)

    @property
    def is_complete(self):
        return self.element_type.is_complete


class TensorType(ShapedType):
    __slots__ = ()

    def __new__(cls, shape, element_type: Type):
        shape = tuple(None if d is None else int(d) for d in shape)

        def init(t):
            t.shape = shape
            t.element_type = element_type
            t._text = f"tensor<{_dims_text(shape)}{element_type}>"
        return _interned(cls, (shape, element_type), init)

    def with_shape(self, shape):
        return TensorType(shape, self.element_type)

    def with_element(self, element_type):
        return TensorType(self.shape, element_type)


class MemRefType(ShapedType):
    """A buffer.  `scope` is TVM's storage scope: global, shared, local, ..."""

    __slots__ = ("scope",)

    def __new__(cls, shape, element_type: Type, scope: str = "global"):
        shape = tuple(None if d is None else int(d) for d in shape)

        def init(t):
            t.shape = shape
            t.element_type = element_type
            t.scope = scope
            sc = "" if scope == "global" else f', "{scope}"'
            t._text = f"memref<{_dims_text(shape)}{element_type}{sc}>"
        return _interned(cls, (shape, element_type, scope), init)


class VectorType(ShapedType):
    __slots__ = ()

    def __new__(cls, shape, element_type: Type):
        shape = tuple(int(d) for d in shape)

        def init(t):
            t.shape = shape
            t.element_type = element_type
            t._text = f"vector<{_dims_text(shape)}{element_type}>"
        return _interned(cls, (shape, element_type), init)

    @property
    def lanes(self):
        return self.shape[0] if len(self.shape) == 1 else self.num_elements()


class TupleType(Type):
    __slots__ = ("types",)

    def __new__(cls, types):
        types = tuple(types)

        def init(t):
            t.types = types
            t._text = "tuple<" + ", ".join(str(x) for x in types) + ">"
        return _interned(cls, types, init)

    @property
    def is_complete(self):
        return all(t.is_complete for t in self.types)


class FunctionType(Type):
    __slots__ = ("inputs", "results")

    def __new__(cls, inputs, results):
        inputs, results = tuple(inputs), tuple(results)

        def init(t):
            t.inputs = inputs
            t.results = results
            ins = "(" + ", ".join(str(x) for x in inputs) + ")"
            if len(results) == 1 and not isinstance(results[0], FunctionType):
                outs = str(results[0])
            else:
                outs = "(" + ", ".join(str(x) for x in results) + ")"
            t._text = f"{ins} -> {outs}"
        return _interned(cls, (inputs, results), init)

    @property
    def is_complete(self):
        return all(t.is_complete for t in self.inputs + self.results)


class OpaqueType(Type):
    """``!dialect.name`` or ``!dialect.name<body>``: a dialect's own type."""

    __slots__ = ("dialect_type", "body")

    def __new__(cls, dialect_type: str, body: str = ""):
        def init(t):
            t.dialect_type = dialect_type
            t.body = body
            t._text = f"!{dialect_type}" + (f"<{body}>" if body else "")
        return _interned(cls, (dialect_type, body), init)


# -- common instances ---------------------------------------------------------

i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
u8 = IntegerType(8, True)
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")
index = IndexType()
string = StringType()
none = NoneType()
incomplete = IncompleteType()


def is_float(t: Type) -> bool:
    return isinstance(t, FloatType)


def is_minifloat(t: Type) -> bool:
    """One of the 8- and 4-bit float types (ir/minifloat.py): a byte per
    element in memory, computed in f32."""
    return isinstance(t, FloatType) and t.width <= 8


def is_int(t: Type) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def reads_unsigned(t: Type) -> bool:
    """Compared, divided, maxed and shifted as unsigned: ``uiN``, and ``i1``
    (numpy's bool: true is 1)."""
    return isinstance(t, IntegerType) and (t.unsigned or t.width == 1)


def element_type(t: Type) -> Type:
    return t.element_type if isinstance(t, ShapedType) else t


# -- literal ranges -------------------------------------------------------------
#
# The integers a constant may be written with (checked by the parser for
# ``arith.constant`` and ``dense<...>`` literals, messages by int_range_error):
#
# * signless ``iN``: -2**(N-1) .. 2**N - 1, as MLIR: the bits are the same,
#   and a value above the signed maximum is read as its two's complement
#   (``arith.constant 255 : i8`` holds -1, and prints so);
# * unsigned ``uiN``: 0 .. 2**N - 1;
# * ``index``: as ``i64``;
# * ``i1``: 0 and 1 (false, true), and -1 (true).
#
# The value a constant op *holds* is canonical (canonical_int): signed for
# signless types, 0/1 for i1, so every pass reads the value the bits mean;
# the verifier checks that range (int_range(t, canonical=True)).
# Floats: any value whose rounding to the type is finite; ``inf`` and
# ``nan`` written as such.

MAX_INT_LITERAL_DIGITS = 100   # longer integer literals are refused by the parser


def int_range(t: Type, canonical: bool = False):
    """(lowest, highest) integer a constant of scalar type `t` may be written
    with, or, with `canonical`, may hold."""
    w = 64 if isinstance(t, IndexType) else t.width
    if isinstance(t, IntegerType) and t.unsigned:
        return 0, (1 << w) - 1
    if w == 1:
        return (0 if canonical else -1), 1
    return -(1 << (w - 1)), ((1 << (w - 1)) - 1 if canonical else (1 << w) - 1)


def canonical_int(v: int, t: Type) -> int:
    """The value a constant of type `t` written as `v` holds (see above); `v`
    must be in int_range(t)."""
    w = 64 if isinstance(t, IndexType) else t.width
    if isinstance(t, IntegerType) and t.unsigned:
        return v
    if w == 1:
        return v & 1
    return v - (1 << w) if v >= (1 << (w - 1)) else v


def _shown_int(v: int) -> str:
    """An integer as a message shows it: a long one cut to its first digits."""
    txt = str(v)
    return txt if len(txt) <= 40 else f"{txt[:20]}...({len(txt)} digits)"


def int_range_error(v: int, t: Type, canonical: bool = False):
    """None if `v` fits a constant of type `t`, else the message saying why not."""
    lo, hi = int_range(t, canonical)
    if lo <= v <= hi:
        return None
    name = "index (as i64)" if isinstance(t, IndexType) else str(t)
    if isinstance(t, IntegerType) and t.unsigned:
        rng = f"{lo} .. {hi}"
    elif canonical:
        rng = f"{lo} .. {hi}, the signed range a signless {name} constant holds"
    else:
        rng = f"{lo} .. {hi}: signless {name} takes the signed or the unsigned range"
    shown = _shown_int(v)
    return f"integer constant {shown} does not fit {t} (range {rng})"


def number_error(v, t: Type, canonical: bool = False):
    """None if the number `v` (int or float) can be a constant of scalar type
    `t` (an attribute that becomes one: a reducer's identity, a guarded
    read's else value), else the message saying why not."""
    import math
    if is_float(t):
        return float_range_error(float(v), t)
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        return f"{v!r} is not an integer, as a constant of {t} must be"
    return int_range_error(int(v), t, canonical)


def index_error(v: int, what: str):
    """None if `v` fits an index (i64, signed), else the message saying
    that `what` (e.g. "loop bound") does not: loop bounds, extents and
    schedule factors all become index constants."""
    if -(1 << 63) <= v < (1 << 63):
        return None
    shown = _shown_int(v)
    return f"{what} {shown} does not fit an index (i64)"


_BF16_INF = float(2 ** 128) * (1 - 2.0 ** -9)   # the least value bf16 rounds to inf


def float_range_error(v: float, t: Type):
    """None if the finite `v` stays finite in float type `t` (inf and nan pass)."""
    import math
    import struct
    if math.isinf(v) or math.isnan(v):
        return None
    kind = t.kind
    if kind == "f64":
        return None
    if is_minifloat(t):
        import numpy as np
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.float32(np.array(v, np.float64).astype(to_numpy_dtype(t)))):
                return None
        return f"float constant {v!r} overflows {t} (its largest finite value is {_f8_max(t)!r})"
    if kind == "bf16":
        if abs(v) < _BF16_INF:
            return None
    else:
        try:
            struct.pack("<f" if kind == "f32" else "<e", v)
            return None
        except OverflowError:
            pass
    return f"float constant {v!r} overflows {t} (write inf for infinity)"


def _f8_max(t):
    from .minifloat import format_of
    return format_of(t).max_value


def storage_type_error(t: Type):
    """None if constants of scalar type `t` can be stored, else why not."""
    if str(t) in _NP or str(t) == "bf16" or is_minifloat(t) or str(t) in _SUBBYTE:
        return None
    return f"constants of type {t} are not supported (no storage type; use i1, i8, i16, i32, i64 or ui8..ui64)"


MAX_ELEMENTS = (1 << 63) - 1


# -- numpy interop ------------------------------------------------------------

_NP = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64", "index": "int64", "string": "object",
}
_FROM_NP = {
    "bool": i1, "int8": i8, "int16": i16, "int32": i32, "int64": i64,
    "uint8": u8, "uint16": IntegerType(16, True), "uint32": IntegerType(32, True),
    "uint64": IntegerType(64, True), "float16": f16, "float32": f32, "float64": f64, "object": string,
}
# TVM's dtype names, accepted wherever a user gives a dtype string.
_F8_FROM_NP = {"float8_e4m3fn": FloatType("f8E4M3FN"), "float8_e4m3fnuz": FloatType("f8E4M3FNUZ"),
               "float8_e5m2": FloatType("f8E5M2"), "float8_e5m2fnuz": FloatType("f8E5M2FNUZ"),
               "float4_e2m1fn": FloatType("f4E2M1FN")}
# 4- and 2-bit integers: a byte per element, the value in its low bits
# (ml_dtypes' layout; ONNX packs them two or four to a byte in its files)
_SUBBYTE = {"i4": "int4", "ui4": "uint4", "i2": "int2", "ui2": "uint2"}
_SUBBYTE_FROM_NP = {"int4": IntegerType(4), "uint4": IntegerType(4, True), "int2": IntegerType(2),
                    "uint2": IntegerType(2, True)}
_TVM_DTYPES = dict(_FROM_NP)
_TVM_DTYPES.update(_F8_FROM_NP)
_TVM_DTYPES.update(_SUBBYTE_FROM_NP)
_TVM_DTYPES.update({"bfloat16": bf16})


def to_numpy_dtype(t: Type):
    import numpy as np
    name = _NP.get(str(t))
    if name is None and is_minifloat(t):
        from .minifloat import format_of
        return format_of(t).numpy_dtype()
    if name is None and str(t) == "bf16":
        import ml_dtypes     # the interpreters compute in it; buffers hold the bits (storage_numpy_dtype)
        return np.dtype(ml_dtypes.bfloat16)
    if name is None and str(t) in _SUBBYTE:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, _SUBBYTE[str(t)]))
    if name is None:
        raise TypeError(f"type {t} has no numpy dtype")
    return np.dtype(name)


_STORAGE_DTYPES: dict = {}   # element type -> its numpy dtype (the runtime asks per input, per call)


def storage_numpy_dtype(t: Type):
    """The numpy dtype of a buffer of `t` crossing the runtime: its own, or
    uint16 for bf16 (the raw bits, as classic TVM's NDArray held them;
    inside, the interpreters hold ml_dtypes' bfloat16, to_numpy_dtype)."""
    dt = _STORAGE_DTYPES.get(t)
    if dt is None:
        import numpy as np
        dt = np.dtype("uint16") if str(t) == "bf16" else to_numpy_dtype(t)
        _STORAGE_DTYPES[t] = dt
    return dt


def as_storage(a):
    """An array as buffers hold it: ml_dtypes' bfloat16 as its bits (uint16)."""
    if getattr(a, "dtype", None) is not None and a.dtype.name == "bfloat16":
        return a.view("uint16")
    return a


def as_values(a, t):
    """A buffer of type `t` as the interpreters compute on it: bf16 bits
    (uint16) as ml_dtypes' bfloat16; anything else as it is."""
    if isinstance(t, ShapedType) and str(t.element_type) == "bf16" and getattr(a, "dtype", None) == "uint16":
        return a.view(to_numpy_dtype(t.element_type))
    return a


def from_numpy_dtype(dtype) -> Type:
    t = _FROM_NP.get(str(dtype))
    if t is None:
        t = _F8_FROM_NP.get(str(dtype)) or _SUBBYTE_FROM_NP.get(str(dtype))
    if t is None:
        raise TypeError(f"numpy dtype {dtype} has no tvmd type")
    return t


def from_dtype_name(name: str) -> Type:
    """A type from a TVM dtype name (``float32``) or an MLIR name (``f32``)."""
    t = _TVM_DTYPES.get(name)
    if t is not None:
        return t
    return parse_type(name)


def tvm_dtype_name(t: Type) -> str:
    """The TVM spelling of a scalar type, for names and messages."""
    if is_minifloat(t):
        return {v: k for k, v in _F8_FROM_NP.items()}[t]
    if str(t) in _SUBBYTE:
        return _SUBBYTE[str(t)]
    return {"i1": "bool"}.get(str(t), _NP.get(str(t), str(t)))


# -- parsing from text --------------------------------------------------------

_SCALAR_RE = re.compile(r"(u?i)(\d+)|f16|bf16|f32|f64|f8E4M3FNUZ|f8E4M3FN|f8E5M2FNUZ|f8E5M2|f4E2M1FN|index|none|string")
_parse_cache: dict[str, Type] = {}

# Dialect types that are more than opaque text: "relay.adt" -> parser(p),
# called with the _TypeParser just after the name; it reads the rest (the
# ``<...>`` body) and returns the dialect's Type.  Filled by the dialects.
TYPE_PARSERS: dict = {}


def _dialect_type_parser(name: str):
    """The registered parser for ``!name``, importing its dialect first so
    that a type never parses one way before the dialect loads and another
    way after (parse_type memoizes)."""
    fn = TYPE_PARSERS.get(name)
    if fn is None and "." in name:
        from .registry import DIALECTS, load_dialect
        dialect = name.split(".", 1)[0]
        if dialect in DIALECTS:
            load_dialect(dialect)
            fn = TYPE_PARSERS.get(name)
    return fn


class TypeSyntaxError(ValueError):
    def __init__(self, message, offset=0):
        super().__init__(message)
        self.offset = offset


def parse_type(text: str) -> Type:
    """Parse the text of a type.  Memoized: types recur thousands of times."""
    t = _parse_cache.get(text)
    if t is None:
        p = _TypeParser(text)
        t = p.type()
        p.skip_ws()
        if p.pos != len(text):
            raise TypeSyntaxError(f"unexpected '{text[p.pos:]}' after type", p.pos)
        if len(_parse_cache) < 100000:
            _parse_cache[text] = t
    return t


class _TypeParser:
    """Recursive descent over the grammar in the module docstring."""

    def __init__(self, text):
        self.s = text
        self.pos = 0

    def skip_ws(self):
        s, n = self.s, len(self.s)
        while self.pos < n and s[self.pos] in " \t\r\n":
            self.pos += 1

    def eat(self, lit):
        self.skip_ws()
        if self.s.startswith(lit, self.pos):
            self.pos += len(lit)
            return True
        return False

    def expect(self, lit):
        if not self.eat(lit):
            raise TypeSyntaxError(f"expected '{lit}' in type", self.pos)

    def word(self):
        self.skip_ws()
        m = re.compile(r"[A-Za-z_][\w.]*").match(self.s, self.pos)
        if not m:
            raise TypeSyntaxError("expected a type", self.pos)
        self.pos = m.end()
        return m.group(0)

    def type(self) -> Type:
        self.skip_ws()
        s = self.s
        if self.eat("?"):
            return incomplete
        if self.eat("("):
            ins = []
            if not self.eat(")"):
                ins.append(self.type())
                while self.eat(","):
                    ins.append(self.type())
                self.expect(")")
            self.expect("->")
            if self.eat("("):
                outs = []
                if not self.eat(")"):
                    outs.append(self.type())
                    while self.eat(","):
                        outs.append(self.type())
                    self.expect(")")
            else:
                outs = [self.type()]
            return FunctionType(ins, outs)
        if self.eat("!"):
            name = self.word()
            custom = _dialect_type_parser(name)
            if custom is not None:
                return custom(self)
            body = ""
            if self.s.startswith("<", self.pos):
                start = self.pos + 1
                depth = 0
                while self.pos < len(s):
                    c = s[self.pos]
                    if c == "<":
                        depth += 1
                    elif c == ">":
                        depth -= 1
                        if depth == 0:
                            break
                    self.pos += 1
                if depth != 0:
                    raise TypeSyntaxError("unbalanced '<' in dialect type", start)
                body = s[start:self.pos]
                self.pos += 1
            return OpaqueType(name, body)
        start = self.pos
        w = self.word()
        if w in ("tensor", "memref", "vector"):
            self.expect("<")
            shape = []
            while True:
                self.skip_ws()
                m = re.compile(r"(\?|\d+)x").match(s, self.pos)
                if not m:
                    break
                digits = m.group(1)
                if len(digits) > 19:   # more than any i64 has; int() of 4300+ digits raises
                    raise TypeSyntaxError(f"dimension {digits[:24]}{'...' if len(digits) > 24 else ''} "
                                          "does not fit in i64", self.pos)
                shape.append(None if digits == "?" else int(digits))
                self.pos = m.end()
            elem = self.type()
            scope = "global"
            if w == "memref" and self.eat(","):
                self.skip_ws()
                m = re.compile(r'"([^"]*)"').match(s, self.pos)
                if not m:
                    raise TypeSyntaxError("expected a memory scope string", self.pos)
                scope = m.group(1)
                self.pos = m.end()
            self.expect(">")
            n = 1
            for d in shape:
                if d is not None:
                    n *= d
            if n > MAX_ELEMENTS:
                raise TypeSyntaxError(f"{w} type has {n} elements, more than fit in i64", start)
            if w == "tensor":
                return TensorType(shape, elem)
            if w == "memref":
                return MemRefType(shape, elem, scope)
            if None in shape:
                raise TypeSyntaxError("vector dimensions must be static", start)
            return VectorType(shape, elem)
        if w == "tuple":
            self.expect("<")
            elems = []
            if not self.eat(">"):
                elems.append(self.type())
                while self.eat(","):
                    elems.append(self.type())
                self.expect(">")
            return TupleType(elems)
        m = _SCALAR_RE.fullmatch(w)
        if not m:
            raise TypeSyntaxError(f"unknown type '{w}'", start)
        if m.group(1):
            digits = m.group(2)
            width = int(digits) if len(digits) <= 4 else 0   # int() of 4300+ digits raises
            if not 1 <= width <= 128:
                raise TypeSyntaxError(f"integer width {digits[:24]}{'...' if len(digits) > 24 else ''} "
                                      "out of range (1 to 128)", start)
            return IntegerType(width, m.group(1) == "ui")
        if w == "index":
            return index
        if w == "none":
            return none
        if w == "string":
            return string
        return FloatType(w)
