"""Attribute values.

Attributes are plain immutable Python values wherever one fits, so a pass
reads ``op.attributes["strides"]`` and gets ``(2, 2)``:

    text                          Python value
    42, -1, 0x1F                  int
    1.5, 1e-05, inf, nan          float
    true, false                   bool
    "NCHW"                        str
    [1, 2, 3]                     tuple
    f32, tensor<4xf32>            a Type
    unit                          UNIT
    @main                         SymbolRef("main")
    {a = 1, b = "x"}              FrozenDict
    dense<[1.0, 2.0]> : T         DenseAttr (numpy array + tensor type)
    dense_resource<w0> : T        DenseAttr whose bytes live in the resource section
    #dialect.name<a, b>           DialectAttr("dialect.name", (a, b))
"""

from __future__ import annotations

import math

from .types import ShapedType, TensorType, Type


class _Unit:
    __slots__ = ()

    def __repr__(self):
        return "unit"


UNIT = _Unit()


class SymbolRef:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, SymbolRef) and other.name == self.name

    def __hash__(self):
        return hash(("@", self.name))

    def __repr__(self):
        return "@" + print_symbol_name(self.name)


class FrozenDict(dict):
    """A dictionary attribute: hashable, and not meant to be mutated."""

    def __hash__(self):
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))

    def _immutable(self, *a, **k):
        raise TypeError("FrozenDict is immutable")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _immutable


class DialectAttr:
    """``#dialect.name<params>``: an attribute a dialect defines, e.g. a tuning knob."""

    __slots__ = ("name", "params")

    def __init__(self, name: str, params=()):
        self.name = name
        self.params = tuple(params)

    def __eq__(self, other):
        return isinstance(other, DialectAttr) and (self.name, self.params) == (other.name, other.params)

    def __hash__(self):
        return hash((self.name, self.params))

    def __repr__(self):
        return print_attr(self)


class DenseAttr:
    """A constant tensor: a numpy array with its tensor type.

    A splat (every element the same) is held as a 0-stride view of one
    element (``np.broadcast_to``), so a splat of any size costs one element:
    parsing, printing, hashing and comparing it never touch the full tensor.
    Code that needs the elements in memory (``np.ascontiguousarray``) is
    where the size limit applies: see check_constant_size.

    `key` names its blob in the resource section when it is printed there
    (large constants that are not splats are); it survives a round trip
    through text.
    """

    __slots__ = ("array", "type", "key", "_hash", "_splat")

    def __init__(self, array, type: TensorType | None = None, key: str | None = None):
        import numpy as np
        from .types import from_numpy_dtype
        array = np.asarray(array)
        if type is None:
            type = TensorType(array.shape, from_numpy_dtype(array.dtype))
        if array.dtype == np.uint16 and str(type.element_type) == "bf16":
            array = array.view(type.dtype)    # bf16 bits (the runtime's form): the same values
        if array.shape != type.shape:
            array = np.broadcast_to(array, type.shape)
        if _is_splat_view(array):
            # convert one element, never the broadcast; a private copy so the
            # caller's buffer cannot change the attribute
            array = splat_array(array.flat[0], type.dtype, type.shape)
        else:
            if array.dtype != type.dtype:
                array = array.astype(type.dtype)
            if array.flags.writeable:
                array = array.copy()
                array.flags.writeable = False
        self.array = array
        self.type = type
        self.key = key
        self._hash = None
        self._splat = None

    @classmethod
    def splat(cls, value, type: TensorType):
        """The splat of `value` (converted to the element type) over `type`."""
        return cls(splat_array(value, type.dtype, type.shape), type)

    def __eq__(self, other):
        """Same type and the same elements; two splats compare their one
        element's bytes, so a huge splat compares in O(1)."""
        if self is other:
            return True
        if not (isinstance(other, DenseAttr) and self.type is other.type and hash(self) == hash(other)):
            return False
        if self.is_splat() and other.is_splat():
            return _bytes(self.array.flat[:1]) == _bytes(other.array.flat[:1])
        return bool((self.array == other.array).all())

    def __hash__(self):
        """A splat hashes by (type, its element): never the full tensor's bytes."""
        if self._hash is None:
            if self.is_splat():
                self._hash = hash((self.type, "splat", _bytes(self.array.flat[:1])))
            else:
                import hashlib
                self._hash = hash((self.type, hashlib.blake2b(_bytes(self.array), digest_size=16).digest()))
        return self._hash

    @property
    def size(self):
        return self.array.size

    @property
    def nbytes(self) -> int:
        """The bytes the elements take once materialised (a splat's view takes one element)."""
        return self.array.size * self.array.dtype.itemsize

    def is_splat(self):
        """Whether the tensor has elements and all are bitwise the same.
        O(1) for the splat representation (a 0-stride view); otherwise one
        pass over the elements (after an O(1) reject on three of them), cached."""
        s = self._splat
        if s is None:
            s = self._splat = _is_splat_view(self.array) or _all_same(self.array)
        return s

    def __repr__(self):
        return f"DenseAttr({self.type}, {self.array.size} elements{', splat' if self.is_splat() else ''})"


def _is_splat_view(a) -> bool:
    """A non-empty array whose every stride is 0: one element seen everywhere."""
    return a.size > 0 and not any(a.strides)


def _bytes(a) -> bytes:
    """The elements' bytes; strings (an object array) as their UTF-8, each
    with its length (an object array's own bytes are pointers)."""
    import numpy as np
    a = np.asarray(a)
    if a.dtype != object:
        return a.tobytes()
    return b"".join(len(b).to_bytes(8, "little") + b for b in (str(x).encode("utf-8") for x in a.reshape(-1)))


def _all_same(a) -> bool:
    import numpy as np
    n = a.size
    if n == 0:
        return False
    if n == 1:
        return True
    if a.dtype == object:     # strings
        first = a.flat[0]
        return all(x == first for x in a.flat)
    # compare bytes, not values: [0.0, -0.0] is not a splat, a NaN splat is
    first = a.flat[0].tobytes()
    if a.flat[n // 2].tobytes() != first or a.flat[n - 1].tobytes() != first:
        return False
    u = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(n, a.dtype.itemsize)
    return bool((u == u[0]).all())


def splat_array(value, dtype, shape):
    """A read-only 0-stride view of `value` as `dtype` over `shape`: the
    splat representation, one element of memory whatever the shape."""
    import numpy as np
    one = np.empty((), dtype)
    with np.errstate(all="ignore"):
        np.copyto(one, value, casting="unsafe")   # as np.full converts its fill value
    return np.broadcast_to(one, tuple(shape))


# -- printing -----------------------------------------------------------------

import re as _re

_BARE_SYMBOL = _re.compile(r"[A-Za-z_][\w$.\-]*\Z")
_BARE_KEY = _re.compile(r"[A-Za-z_][\w$.\-]*\Z")
_KEYWORDS = frozenset({"true", "false", "unit", "inf", "nan", "dense", "dense_resource"})


def print_symbol_name(name: str) -> str:
    return name if _BARE_SYMBOL.match(name) else quote(name)


def print_key(name: str) -> str:
    return name if _BARE_KEY.match(name) and name not in _KEYWORDS else quote(name)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote(s: str) -> str:
    out = []
    for ch in s:
        e = _ESCAPES.get(ch)
        if e is not None:
            out.append(e)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%02X" % ord(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def print_float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(float(x))
    return r


def print_attr(v) -> str:
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return print_float(v)
    if t is str:
        return quote(v)
    if t is tuple or t is list:
        return "[" + ", ".join(print_attr(x) for x in v) + "]"
    if isinstance(v, Type):
        return v._text
    if v is UNIT:
        return "unit"
    if t is SymbolRef:
        return "@" + print_symbol_name(v.name)
    if isinstance(v, dict):
        return print_attr_dict(v)
    if t is DialectAttr:
        if not v.params:
            return "#" + v.name
        return "#" + v.name + "<" + ", ".join(print_attr(x) for x in v.params) + ">"
    if t is DenseAttr:
        return print_dense(v) + " : " + v.type._text
    import numpy as np
    if isinstance(v, np.integer):
        return str(int(v))
    if isinstance(v, np.floating):
        return print_float(float(v))
    raise TypeError(f"cannot print attribute value {v!r} of type {t.__name__}")


def print_attr_dict(d) -> str:
    if not d:
        return "{}"
    return "{" + ", ".join(
        print_key(k) if v is UNIT else f"{print_key(k)} = {print_attr(v)}" for k, v in d.items()) + "}"


def _scalar_text(x, is_float, is_bool):
    if type(x) is str:
        return quote(x)
    if is_bool:
        return "true" if x else "false"
    if is_float:
        import numpy as np
        if isinstance(x, np.floating) and x.dtype != np.float64:
            f = float(x)
            if math.isnan(f) or math.isinf(f):
                return print_float(f)
            s = str(x)  # numpy gives the shortest text that reads back to the same f16/f32
            return s if ("." in s or "e" in s or "n" in s) else s + ".0"
        return print_float(float(x))
    return str(int(x))


def print_dense(attr: DenseAttr, resource_key: str | None = None) -> str:
    if resource_key is not None:
        return f"dense_resource<{resource_key}>"
    a = attr.array
    kind = a.dtype.kind
    # ml_dtypes' float8 and bfloat16 dtypes are kind "V"; their values are exact doubles
    is_float, is_bool = kind == "f" or a.dtype.name.startswith(("float8", "bfloat16")), kind == "b"
    if a.size == 0:
        return "dense<[]>"
    if attr.is_splat():
        return "dense<" + _scalar_text(a.flat[0], is_float, is_bool) + ">"

    def rec(x):
        if x.ndim == 0:
            return _scalar_text(x[()], is_float, is_bool)
        if x.ndim == 1:
            return "[" + ", ".join(_scalar_text(e, is_float, is_bool) for e in x) + "]"
        return "[" + ", ".join(rec(s) for s in x) + "]"
    return "dense<" + rec(a) + ">"


def max_constant_bytes() -> int:
    """The most bytes one constant may take when it is materialised (folded,
    bound by the executor): env TVMD_MAX_CONSTANT_BYTES, default 512 MiB.
    Parsing and printing a splat materialise nothing, so any size is fine there."""
    import os
    try:
        return int(os.environ.get("TVMD_MAX_CONSTANT_BYTES", 512 << 20))
    except ValueError:
        return 512 << 20


def tensor_bytes(t) -> int | None:
    """The bytes a value of type `t` takes in memory (a tuple: its fields
    together); None when that is not known (dynamic shape, no storage type)."""
    from .types import TupleType
    if isinstance(t, TupleType):
        sizes = [tensor_bytes(f) for f in t.types]
        return None if None in sizes else sum(sizes)
    if not isinstance(t, ShapedType) or not t.is_static:
        return None
    try:
        return t.num_elements() * t.dtype.itemsize
    except TypeError:
        return None


def check_constant_size(t, loc, doing: str):
    """Raise a located DiagnosticError when materialising a value of type `t`
    would take more than max_constant_bytes(); `doing` names what would, e.g.
    ``fold-constant: folding 'relay.add'``.  Called before the memory is
    taken, so a huge constant is an error, never a MemoryError."""
    n = tensor_bytes(t)
    limit = max_constant_bytes()
    if n is not None and n > limit:
        from .diagnostics import DiagnosticError
        raise DiagnosticError(loc, f"{doing} would materialise {n} bytes ({t}), more than the limit of "
                                   f"{limit} (TVMD_MAX_CONSTANT_BYTES)")


def _flat_literal(value, out):
    if isinstance(value, (tuple, list)):
        for x in value:
            _flat_literal(x, out)
    else:
        out.append(value)
    return out


def _check_elements(value, type, et):
    """Raise ValueError if an element of the literal does not fit `et`
    (ranges as in ir/types.py: int_range, float_range_error)."""
    from .types import FloatType, canonical_int, float_range_error, int_range_error
    elems = _flat_literal(value, []) if isinstance(value, (tuple, list)) else [value]
    if str(et) == "string" or any(type_(x) is str for x in elems):
        if str(et) != "string" or not all(type_(x) is str for x in elems):
            raise ValueError(f"dense elements of a {et} tensor are "
                             f"{'quoted strings' if str(et) == 'string' else 'numbers'}")
        return
    if isinstance(et, FloatType):
        for x in elems:
            if type_(x) is bool:
                continue
            try:
                f = float(x)
            except OverflowError:
                raise ValueError(f"dense element {x} overflows {et}") from None
            msg = float_range_error(f, et)
            if msg:
                raise ValueError("dense element: " + msg)
        return
    is_bool = str(et) == "i1"
    wrap = False
    for x in elems:
        if type_(x) is float:
            if is_bool or not math.isfinite(x) or x != int(x):
                raise ValueError(f"dense element {print_float(x)} is not an integer for {et}")
            x = int(x)
        x = int(x)
        msg = int_range_error(x, et)
        if msg:
            raise ValueError("dense element: " + msg)
        if not wrap and canonical_int(x, et) != x:
            wrap = True
    return wrap


def _wrap_literal(value, et):
    from .types import canonical_int
    if isinstance(value, (tuple, list)):
        return [_wrap_literal(x, et) for x in value]
    return canonical_int(int(value), et)


type_ = type


def dense_from_literal(value, type: Type):
    """Build a DenseAttr from the parsed literal of ``dense<...>`` (a scalar
    splat or nested lists) and its tensor type; raises ValueError on a shape
    or value mismatch, on an element out of its type's range, on an element
    type with no storage.  A splat literal is kept as a splat, whatever its
    size."""
    import numpy as np
    if not isinstance(type, ShapedType) or not type.is_static:
        raise ValueError(f"dense attribute needs a static tensor type, got {type}")
    try:
        dtype = type.dtype
    except TypeError:
        raise ValueError(f"dense attribute of element type {type.element_type} is not supported "
                         "(no storage type)") from None
    if _check_elements(value, type, type.element_type):
        # MLIR's text range: `dense<255> : tensor<i8>` holds -1 (ir/types.py)
        value = _wrap_literal(value, type.element_type)
    if isinstance(value, (tuple, list)):
        try:
            with np.errstate(all="ignore"):
                arr = np.array(value, dtype=dtype)
        except (ValueError, OverflowError, TypeError) as e:
            raise ValueError(f"bad dense literal: {e}") from None
        if arr.size == 0 and type.num_elements() == 0:
            arr = arr.reshape(type.shape)
        if arr.shape != type.shape:
            if arr.size == type.num_elements() and arr.ndim == 1:
                arr = arr.reshape(type.shape)
            else:
                raise ValueError(f"dense literal has shape {list(arr.shape)}, type needs {list(type.shape)}")
    else:
        # a splat stays one element (see DenseAttr): no size limit here
        return DenseAttr(splat_array(value, dtype, type.shape), type)
    return DenseAttr(arr, type)
