"""Literals and constants (issue 9): every integer and float constant is
range-checked against its type, dense literals too; bad literals are located
diagnostics, never tracebacks nor silently wrapped values."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tvmd.ir import types as T
from tvmd.ir.attributes import dense_from_literal
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module


INT_TYPES = ["i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "index"]
FLOAT_TYPES = ["f16", "f32", "f64"]


def _const(lit, ty):
    return f"tir.func @f(%A: memref<8xf32>) {{\n  %a = arith.constant {lit} : {ty}\n}}\n"


def _dense(lit, ty):
    return f"relay.func @main() -> ? {{\n  %0 = constant dense<{lit}> : tensor<{ty}>\n  return %0\n}}\n"


def _const_value(m):
    for op in m.walk():
        if op.name == "arith.constant":
            return op.attributes["value"]
    raise AssertionError("no constant")


def _dense_value(m):
    for op in m.walk():
        if op.name == "relay.constant":
            return op.attributes["value"].array
    raise AssertionError("no constant")


def _text_range(ty):
    w = 64 if ty == "index" else int(ty.lstrip("ui"))
    if ty.startswith("ui"):
        return 0, 2 ** w - 1
    if w == 1:
        return -1, 1
    return -2 ** (w - 1), 2 ** w - 1


def _held(v, ty):
    """The value a constant written as `v` holds (signless: the signed one)."""
    w = 64 if ty == "index" else int(ty.lstrip("ui"))
    if ty.startswith("ui"):
        return v
    if w == 1:
        return v & 1
    return v - 2 ** w if v >= 2 ** (w - 1) else v


def _diag(text):
    with pytest.raises(DiagnosticError) as e:
        parse_module(text)
    return str(e.value)


@pytest.mark.parametrize("lit,ty,msg", [
    ("4294967297", "i32", "integer constant 4294967297 does not fit i32"),
    ("300", "i8", "integer constant 300 does not fit i8"),
    ("18446744073709551616", "index", "does not fit index"),
    ("-1", "ui32", "does not fit ui32"),
    ("1e308", "f32", "overflows f32"),
    ("1e400", "f64", "overflows f64"),
    ("1", "i3", "not supported"),
    ("1" * 101, "i64", "too long"),
    ("0x" + "F" * 4000, "i64", "too long"),
])
def test_constant_out_of_range_is_located_error(lit, ty, msg):
    assert msg in _diag(_const(lit, ty))


@pytest.mark.parametrize("lit,ty,msg", [
    ("9223372036854775808", "i32", "does not fit i32"),
    ("3.5e38", "i32", "does not fit i32"),
    ("[1, 300]", "2xi8", "integer constant 300 does not fit i8"),
    ("1e39", "f32", "overflows f32"),
    ("1", "i3", "not supported"),
    ("1", "none", "not supported"),
    ("1.0", "4294967296x4294967296x4xf32", "more than fit in i64"),
    ("1" + "0" * 5000, "i64", "too long"),
])
def test_dense_out_of_range_is_located_error(lit, ty, msg):
    assert msg in _diag(_dense(lit, ty))


def test_signless_unsigned_range_holds_signed_value():
    m = parse_module(_const("255", "i8"))
    assert _const_value(m) == -1
    assert "arith.constant -1 : i8" in print_module(m)
    assert _dense_value(parse_module(_dense("4294967295", "i32")))[()] == -1


def test_splat_literal_has_no_parse_limit(monkeypatch):
    """A splat stays one element, so the limit (TVMD_MAX_CONSTANT_BYTES)
    applies where constants are materialised, not in the parser
    (tests/test_splat_constants.py)."""
    monkeypatch.setenv("TVMD_MAX_CONSTANT_BYTES", "64")
    a = dense_from_literal(1.0, T.parse_type("tensor<1x4294967296xf32>"))
    assert a.is_splat() and a.array.shape == (1, 4294967296) and a.array.base.nbytes == 4
    assert dense_from_literal(1.0, T.parse_type("tensor<16xf32>")).array.shape == (16,)


def _float_fits(v, ty):
    if ty == "f64" or math.isinf(v) or math.isnan(v):
        return True
    try:
        struct.pack("<f" if ty == "f32" else "<e", v)
        return True
    except OverflowError:
        return False


@settings(max_examples=150, deadline=None)
@given(v=st.one_of(st.integers(-2 ** 70, 2 ** 70),
                   st.sampled_from([2 ** k + d for k in (1, 7, 8, 15, 16, 31, 32, 63, 64) for d in (-1, 0, 1)]),
                   st.sampled_from([-2 ** k + d for k in (1, 7, 8, 15, 16, 31, 32, 63, 64) for d in (-1, 0, 1)])),
       ty=st.sampled_from(INT_TYPES), dense=st.booleans())
def test_integer_constants_verify_exactly_or_diagnose(v, ty, dense):
    text = _dense(str(v), ty) if dense else _const(str(v), ty)
    lo, hi = _text_range(ty)
    if lo <= v <= hi:
        m = parse_module(text)
        got = _dense_value(m)[()] if dense else _const_value(m)
        assert int(got) == _held(v, ty)
        m2 = parse_module(print_module(m))
        got2 = _dense_value(m2)[()] if dense else _const_value(m2)
        assert int(got2) == int(got)
    else:
        assert "does not fit" in _diag(text)


@settings(max_examples=150, deadline=None)
@given(v=st.floats(allow_nan=False, allow_infinity=True), ty=st.sampled_from(FLOAT_TYPES), dense=st.booleans())
def test_float_constants_verify_exactly_or_diagnose(v, ty, dense):
    lit = "inf" if v == math.inf else "-inf" if v == -math.inf else repr(v)
    text = _dense(lit, ty) if dense else _const(lit, ty)
    if _float_fits(v, ty):
        m = parse_module(text)
        got = float(_dense_value(m)[()]) if dense else _const_value(m)
        want = float(np.array(v, dtype=ty.replace("f", "float"))[()])
        if not dense:
            want = v   # arith.constant holds the f64 value it was written with
        assert got == want
        m2 = parse_module(print_module(m))
        got2 = float(_dense_value(m2)[()]) if dense else _const_value(m2)
        assert got2 == got
    else:
        assert "overflows" in _diag(text)


def test_verifier_rejects_shape_beyond_i64():
    """Types built in Python (the parser refuses the text) are checked too."""
    from tvmd.dialects.builtin.ops import ModuleOp
    from tvmd.ir.core import unregistered_op_class
    from tvmd.ir.location import UNKNOWN
    from tvmd.ir.verifier import verify
    m = ModuleOp.create_empty()
    big = T.TensorType((2 ** 32, 2 ** 32, 4), T.f32)
    m.body.append(unregistered_op_class("test.big")((), (big,), {}, (), UNKNOWN))
    with pytest.raises(DiagnosticError, match="more than fit in i64"):
        verify(m)
