"""TE computes of relay's data-movement operators (conversion/relay_to_te/topi_transform.py),
checked against each op's numpy compute(): by the TE interpreter, scheduled, and compiled (topi_check)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from topi_check import check, compile_and_run, prim, random_input, reference, same  # noqa: E402

from tvmd.conversion.relay_to_te.pass_ import lower_function  # noqa: E402
from tvmd.conversion.te_to_tir.apply_schedule import apply_to_func  # noqa: E402
from tvmd.dialects.te.interpreter import run  # noqa: E402
from tvmd.ir.verifier import verify  # noqa: E402
from tvmd.parser import parse_module  # noqa: E402


def one(op, *types, attrs=""):
    """A primitive function applying `op` to parameters of `types`."""
    names = [f"x{k}" for k in range(len(types))]
    args = ", ".join("%" + n for n in names)
    return prim(list(zip(names, types)), [f"%r = {op}({args}) {{{attrs}}}" if attrs else f"%r = {op}({args})"])


@pytest.mark.parametrize("shape,newshape", [
    ("2x3x4xf32", "[4, -1]"), ("2x3x4xf32", "[0, -1]"), ("2x3x4xi32", "[-3, 0]"), ("6x4xf32", "[-4, 2, -1, 4]"),
    ("2x3x4xf32", "[24]"), ("2x3x4xi64", "[2, -2]"), ("5x1xf32", "[1, 5, 1]"),
])
def test_reshape(shape, newshape):
    check(one("reshape", f"tensor<{shape}>", attrs=f"newshape = {newshape}"))


def test_reshape_like():
    check(one("reshape_like", "tensor<2x3x4xf32>", "tensor<6x2x2xi8>"))


@pytest.mark.parametrize("shape,attrs", [
    ("1x3x1x4xf32", ""), ("1x3x1x4xf32", "axis = [0]"), ("1x3x1x4xi32", "axis = [-2, 0]"), ("2x1xf32", "axis = 1"),
])
def test_squeeze(shape, attrs):
    check(one("squeeze", f"tensor<{shape}>", attrs=attrs))


@pytest.mark.parametrize("axis,k", [(0, 1), (1, 2), (-1, 1), (-3, 1), (2, 0)])
def test_expand_dims(axis, k):
    check(one("expand_dims", "tensor<3x4xf32>", attrs=f"axis = {axis}, num_newaxis = {k}"))


@pytest.mark.parametrize("attrs", ["", "axes = [0, 2, 1]", "axes = [-1, 0, 1]", "axes = [1, 0, 2]"])
def test_transpose(attrs):
    check(one("transpose", "tensor<2x3x8xf32>", attrs=attrs))


@pytest.mark.parametrize("types,axis", [
    (["2x3xf32", "2x5xf32"], -1), (["2x3xf32", "4x3xf32", "1x3xf32"], 0), (["2x1x4xi32", "2x2x4xi32"], 1),
    (["3x16xf32", "3x16xf32"], 1), (["4xf32"], 0),
])
def test_concatenate(types, axis):
    check(one("concatenate", *[f"tensor<{t}>" for t in types], attrs=f"axis = {axis}"))


@pytest.mark.parametrize("n,axis", [(2, 0), (3, 1), (2, -1), (3, 2), (1, 0)])
def test_stack(n, axis):
    check(one("stack", *["tensor<2x3xf32>"] * n, attrs=f"axis = {axis}"))


@pytest.mark.parametrize("attrs,items", [
    ("indices_or_sections = 3, axis = 1", [0, 1, 2]), ("indices_or_sections = [1, 3], axis = -1", [0, 2]),
    ("indices_or_sections = [2, 2], axis = 0", [1, 0, 2]), ("indices_or_sections = 1", [0]),
])
def test_split_items(attrs, items):
    """Pieces taken out by get_item and returned as several results."""
    body = [f"%p = split(%x) {{{attrs}}}"] + [f"%r{k} = get_item(%p) {{index = {i}}}" for k, i in enumerate(items)]
    check(prim([("x", "tensor<4x6xf32>")], body, ret=", ".join(f"%r{k}" for k in range(len(items)))))


def check_flat(text, seed=0):
    """Like topi_check.check for a function returning one tuple: the te.func
    returns the tuple's fields."""
    rng = np.random.default_rng(seed)
    m = parse_module(text)
    rf = m.body.first
    args = [random_input(a.type, rng) for a in rf.body.args]
    want = [a for w in reference(rf, args) for a in (w if isinstance(w, tuple) else (w,))]
    tf = lower_function(m, rf)
    verify(m)
    same(run(tf, *args), want)
    apply_to_func(tf)
    verify(m)
    same(run(tf, *args), want)
    same(compile_and_run(m, tf.sym_name, args), want)
    return tf


def test_split_returns_tuple():
    tf = check_flat(one("split", "tensor<6x4xi32>", attrs="indices_or_sections = [1, 4]"))
    assert len(tf.function_type.results) == 3


def test_split_into_consumer():
    check(prim([("x", "tensor<4x6xf32>")], ["%p = split(%x) {indices_or_sections = 2, axis = 1}",
                                             "%a = get_item(%p) {index = 0}", "%b = get_item(%p) {index = 1}",
                                             "%r = add(%a, %b)"]))


@pytest.mark.parametrize("attrs", [
    "begin = [0, 1], end = [2, 3]",
    "begin = [1], end = [4], strides = [2]",
    "begin = [-1, 0], end = [-5, 4], strides = [-1, 2]",
    "begin = [3, -2], end = [100, -100], strides = [1, -1]",
    "begin = [1], end = [2], axes = [-1]",
    "begin = [0, 1], end = [-1, 2], slice_mode = \"size\"",
    "begin = [2, 0], end = [1, 3], axes = [1, 0], strides = [1, 2]",
])
def test_strided_slice(attrs):
    check(one("strided_slice", "tensor<5x6xf32>", attrs=attrs))


@pytest.mark.parametrize("src,shape", [("3x1xf32", "[2, 3, 4]"), ("1xi32", "[4, 2]"), ("4xf32", "[4]"),
                                       ("2x1x3xf32", "[2, 5, 3]")])
def test_broadcast_to(src, shape):
    check(one("broadcast_to", f"tensor<{src}>", attrs=f"shape = {shape}"))


def test_broadcast_to_like():
    check(one("broadcast_to_like", "tensor<3x1xf32>", "tensor<2x3x8xi8>"))


@pytest.mark.parametrize("shape,reps", [("2x3xf32", "[2, 1]"), ("2x3xi32", "[3]"), ("3xf32", "[2, 2]"),
                                        ("2x3xf32", "[1, 2, 3]")])
def test_tile(shape, reps):
    check(one("tile", f"tensor<{shape}>", attrs=f"reps = {reps}"))


@pytest.mark.parametrize("repeats,axis", [(2, 0), (3, 1), (2, -1), (1, 0)])
def test_repeat(repeats, axis):
    check(one("repeat", "tensor<2x3xf32>", attrs=f"repeats = {repeats}, axis = {axis}"))


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_reverse(axis):
    check(one("reverse", "tensor<2x3x4xf32>", attrs=f"axis = {axis}"))


@pytest.mark.parametrize("lengths,seq,batch", [
    ([1, 3, 4, 0], 1, 0), ([2, 9, -1, 4], 1, 0), ([3, 1], 0, 1), ([1, 2], -2, -1),
])
@pytest.mark.parametrize("dt", ["i32", "i64"])
def test_reverse_sequence(lengths, seq, batch, dt):
    n = len(lengths)
    shape = {(1, 0): f"{n}x4x3", (0, 1): f"4x{n}x3", (-2, -1): f"3x4x{n}"}[(seq, batch)]
    text = one("reverse_sequence", f"tensor<{shape}xf32>", f"tensor<{n}x{dt}>",
               attrs=f"seq_axis = {seq}, batch_axis = {batch}")
    rng = np.random.default_rng(1)
    x = rng.standard_normal([int(d) for d in shape.split("x")]).astype(np.float32)
    check(text, inputs=[x, np.array(lengths, dtype="int" + dt[1:])])


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", ["3x4", "4x5"]), ("ij,jk", ["3x4", "4x16"]), ("ii->i", ["4x4"]), ("ij->ji", ["3x4"]),
    ("bij,bjk->bik", ["2x3x4", "2x4x5"]), ("i,i->", ["8", "8"]), ("...ij,...jk->...ik", ["2x3x4", "1x4x2"]),
    ("ij,ij,ij->ij", ["2x3", "2x3", "2x3"]), ("ijk->", ["2x3x4"]), ("i,j->ij", ["3", "5"]),
])
def test_einsum(eq, shapes):
    check(one("einsum", *[f"tensor<{s}xf32>" for s in shapes], attrs=f'equation = "{eq}"'), rtol=1e-4, atol=1e-4)


def test_einsum_int():
    check(one("einsum", "tensor<3x4xi32>", "tensor<4x2xi32>", attrs='equation = "ij,jk->ik"'))


def test_layout_transform_still_lowers():
    check(one("layout_transform", "tensor<1x8x2x2xf32>", attrs='src_layout = "NCHW", dst_layout = "NCHW4c"'))


def test_fused_chain():
    """Several data-movement ops in one primitive function, the default schedule inlining them."""
    check(prim([("x", "tensor<2x3x4xf32>")], ["%a = transpose(%x) {axes = [2, 0, 1]}",
                                               "%b = reshape(%a) {newshape = [4, 6]}",
                                               "%c = reverse(%b) {axis = 1}",
                                               "%r = strided_slice(%c) {begin = [1], end = [4], strides = [2]}"]))


def test_tuple_result_through_the_pipeline():
    """A fused kernel that returns split's tuple: the te/tir function has one
    output per field, the call in @main still has the tuple type, and the
    executor hands back the fields."""
    from tvmd.ir.pass_manager import PassContext
    from tvmd.ir.printer import print_module
    from tvmd.ir.registry import get_pass_class
    from tvmd.runtime.executor import Executor
    m = parse_module("""
relay.func @main(%x: tensor<4x6xf32>) -> tuple<tensor<4x2xf32>, tensor<4x4xf32>> {
  %y = exp(%x)
  %p = split(%y) {indices_or_sections = [2], axis = 1}
  return %p
}
""")
    ctx = PassContext()
    for name in ("fuse-ops", "lower-relay-to-te", "lower-te-to-tir"):
        get_pass_class(name)().run(m, ctx)
        verify(m)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    a, b = Executor(parse_module(print_module(m))).run(x)
    np.testing.assert_allclose(a, np.exp(x)[:, :2], rtol=1e-5)
    np.testing.assert_allclose(b, np.exp(x)[:, 2:], rtol=1e-5)


def test_einsum_upper_case_labels_and_ellipsis():
    check(one("einsum", "tensor<2x3x4xf32>", "tensor<4x5xf32>", attrs='equation = "...AB,Bc->...Ac"'),
          rtol=1e-4, atol=1e-4)
