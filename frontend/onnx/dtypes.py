"""ONNX element types <-> tvmd types, and TensorProto -> numpy.

Only the element types tvmd can hold in a tensor map; the others (strings,
complex numbers, the float8/float4/int4 families, bfloat16 without a numpy
dtype here) are reported as unsupported by the node that uses them.
"""

from __future__ import annotations

from ...ir import types as T

# TensorProto.DataType values; spelled out so that this table costs no onnx import.
_ONNX_TO_TVMD = {
    1: T.f32, 2: T.u8, 3: T.i8, 4: T.IntegerType(16, True), 5: T.i16, 6: T.i32, 7: T.i64,
    9: T.i1, 10: T.f16, 11: T.f64, 12: T.IntegerType(32, True), 13: T.IntegerType(64, True),
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


def tensor_to_numpy(tensor):
    """A TensorProto's data as a numpy array (raw or typed fields, external
    data already loaded by onnx.load)."""
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
    for d in tt.shape.dim:
        dims.append(d.dim_value if d.WhichOneof("value") == "dim_value" and d.dim_value >= 0 else None)
    return tt.elem_type, tuple(dims)
