"""ONNX element types <-> tvmd types, and TensorProto -> numpy.

Only the element types tvmd can hold in a tensor map; the others (complex
numbers, float8e8m0) are reported as unsupported by the node that uses them.  The four FLOAT8
types and FLOAT4E2M1 are tvmd's minifloats (ir/minifloat.py), BFLOAT16 its bf16 (held as its
bits, uint16: the backend views ONNX's bfloat16 arrays so), INT4 / UINT4 / INT2 / UINT2
its i4 / ui4 / i2 / ui2 (a byte per element); their arrays are ml_dtypes',
as onnx.numpy_helper gives them (unpacked from ONNX's packed bytes).
"""

from __future__ import annotations

from ...ir import types as T

# TensorProto.DataType values; spelled out so that this table costs no onnx import.
_ONNX_TO_TVMD = {
    1: T.f32, 2: T.u8, 3: T.i8, 4: T.IntegerType(16, True), 5: T.i16, 6: T.i32, 7: T.i64,
    8: T.string, 9: T.i1, 10: T.f16, 11: T.f64, 12: T.IntegerType(32, True), 13: T.IntegerType(64, True),
    17: T.FloatType("f8E4M3FN"), 18: T.FloatType("f8E4M3FNUZ"), 19: T.FloatType("f8E5M2"),
    16: T.bf16, 20: T.FloatType("f8E5M2FNUZ"), 21: T.IntegerType(4, True), 22: T.IntegerType(4),
    23: T.FloatType("f4E2M1FN"), 25: T.IntegerType(2, True), 26: T.IntegerType(2),
}
_TVMD_TO_ONNX = {t: k for k, t in _ONNX_TO_TVMD.items()}

_ONNX_NAMES = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
    7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32",
    13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN",
    18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4",
    23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}


def onnx_type_name(elem_type: int) -> str:
    return _ONNX_NAMES.get(elem_type, f"type {elem_type}")


def to_tvmd(elem_type: int):
    """The tvmd element type of an ONNX element type, or None."""
    return _ONNX_TO_TVMD.get(elem_type)


def to_onnx(t) -> int | None:
    return _TVMD_TO_ONNX.get(t)


INT64_MAX = 2 ** 63 - 1

# the typed field a TensorProto of each supported element type keeps its
# values in when it has no raw_data (the others: int32_data, one per element)
_TYPED_FIELD = {1: "float_data", 7: "int64_data", 8: "string_data", 11: "double_data", 12: "uint64_data",
                13: "uint64_data"}


def elem_type_problem(elem_type: int) -> str | None:
    """What makes an element type code invalid (as opposed to merely
    unsupported), or None."""
    if elem_type == 0:
        return "no element type (UNDEFINED)"
    if elem_type not in _ONNX_NAMES:
        return f"an unknown element type {elem_type}"
    return None


MAX_RANK = 64   # numpy's limit, and so the runtime's


def dims_problem(dims) -> str | None:
    """What is wrong with dims (ints, or names / None for dimensions not
    known statically): more than MAX_RANK of them, a negative one, or more elements than int64 counts
    (which no buffer could hold), or None."""
    dims = [int(d) if isinstance(d, int) else (d or "?") for d in dims]
    if len(dims) > MAX_RANK:
        return f"has {len(dims)} dimensions, more than the {MAX_RANK} an array can have"
    static = [d for d in dims if isinstance(d, int)]
    if any(d < 0 for d in static):
        return f"has a negative dimension in {_dims_text(dims)}"
    n = nonzero = 1
    for d in static:
        n *= d
        nonzero *= d or 1
    if n > INT64_MAX:
        return f"has dims {_dims_text(dims)}: {n} elements, more than int64 can count"
    if n == 0 and nonzero * 16 > INT64_MAX:   # numpy refuses such a shape even with a 0 in it (16: its widest item)
        return f"has dims {_dims_text(dims)}: the nonzero ones multiply to {nonzero}, more than an array can index"
    return None


def _dims_text(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def tensor_problem(tensor) -> str | None:
    """What makes a TensorProto's data unreadable, or None: bad dims, data
    not loaded from an external file, data whose length disagrees with the
    dims.  Only checked for the element types tvmd holds."""
    p = elem_type_problem(tensor.data_type)
    if p is not None:
        return f"has {p}"
    p = dims_problem(tensor.dims)
    if p is not None:
        return p
    if tensor.data_location == 1:    # TensorProto.EXTERNAL: onnx.load(path) loads it into raw_data
        return "keeps its data in an external file, which was not loaded"
    dims = [int(d) for d in tensor.dims]
    n = 1
    for d in dims:
        n *= d
    if tensor.data_type == 8:   # STRING: its values are in string_data, never raw_data
        if tensor.HasField("raw_data"):
            return "is a STRING tensor with raw_data (strings are kept in string_data)"
        if len(tensor.string_data) != n:
            return f"has dims {_dims_text(dims)} ({n} elements) but its string_data holds {len(tensor.string_data)} values"
        return None
    et = to_tvmd(tensor.data_type)
    if et is None:
        return None
    # 4- and 2-bit integers are packed, two or four to a byte of raw_data or an int32_data entry
    per_byte = {21: 2, 22: 2, 23: 2, 25: 4, 26: 4}.get(tensor.data_type)
    if tensor.HasField("raw_data"):
        want = -(-n // per_byte) if per_byte else n * T.to_numpy_dtype(et).itemsize
        if len(tensor.raw_data) != want:
            return (f"has dims {_dims_text(dims)} ({n} elements, {want} bytes of "
                    f"{onnx_type_name(tensor.data_type)}) but its raw_data holds {len(tensor.raw_data)} bytes")
        return None
    field = _TYPED_FIELD.get(tensor.data_type, "int32_data")
    got = len(getattr(tensor, field))
    want = -(-n // per_byte) if per_byte else n
    if got != want:
        return f"has dims {_dims_text(dims)} ({n} elements) but its {field} holds {got} values"
    return None


def tensor_to_numpy(tensor, error):
    """A TensorProto's data as a numpy array (raw or typed fields, external
    data already loaded by onnx.load); a tensor whose data cannot be read
    raises ``error(message)``, the message saying what is wrong."""
    p = tensor_problem(tensor)
    if p is not None:
        raise error(p)
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor)


def value_info_type(vi):
    """(elem_type, dims) of a ValueInfoProto holding a tensor, dims as
    ints with None for a dynamic or unknown dimension; None when it is not
    a tensor (a sequence, a map, an optional) or has no shape."""
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        return None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return tt.elem_type, None
    dims = []
    for d in tt.shape.dim:     # (a negative dim_value: see value_info_problem)
        dims.append(d.dim_value if d.WhichOneof("value") == "dim_value" and d.dim_value >= 0 else None)
    return tt.elem_type, tuple(dims)


def value_info_problem(vi) -> str | None:
    """What is wrong with a tensor ValueInfoProto's declared shape (a
    negative or overflowing static dimension), or None; symbolic and
    unknown dimensions are fine."""
    t = vi.type
    if t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
        return None
    return dims_problem([d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or None)
                         for d in t.tensor_type.shape.dim])
