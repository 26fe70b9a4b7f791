"""The IR core: types, attributes, use lists, block lists, cloning, verification."""

import numpy as np
import pytest

from tvmd.dialects.relay.ops.elemwise import AddOp, ReluOp
from tvmd.dialects.relay.ops.function import ConstantOp
from tvmd.ir import types as T
from tvmd.ir.attributes import UNIT, DenseAttr, DialectAttr, FrozenDict, SymbolRef, print_attr
from tvmd.ir.builder import Builder
from tvmd.ir.core import Block, Region
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.ir.rewriter import RewritePattern, apply_patterns_greedily
from tvmd.ir.verifier import verify
from tvmd.parser import parse_module


def test_types_are_interned_and_print_back():
    for text in ["i1", "i8", "ui8", "i64", "f16", "bf16", "f32", "f64", "index", "none", "?",
                 "tensor<1x3x?xf32>", "tensor<f32>", "memref<16x16xf32>", 'memref<64xf32, "shared">',
                 "vector<8xf32>", "tuple<tensor<2xf32>, i32>", "(tensor<2xf32>, f32) -> tensor<2xf32>",
                 "(i32) -> (i32, f32)", "() -> ()", "!te.axis", "!foo.bar<1, <2>>"]:
        t = T.parse_type(text)
        assert str(t) == text
        assert T.parse_type(str(t)) is t
    assert T.TensorType((2, 3), T.f32) is T.parse_type("tensor<2x3xf32>")
    assert T.TensorType((2, None), T.f32).shape == (2, None)


@pytest.mark.parametrize("bad", ["tensor<2x3>", "f33", "tensor<2xf32", "vector<?xf32>", "i0", "(i32 -> i32"])
def test_bad_types_are_rejected(bad):
    with pytest.raises(T.TypeSyntaxError):
        T.parse_type(bad)


def test_numpy_dtypes_map_both_ways():
    for name in ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"]:
        t = T.from_numpy_dtype(np.dtype(name))
        assert T.to_numpy_dtype(t) == np.dtype(name)
    assert T.from_dtype_name("float32") is T.f32
    assert T.from_dtype_name("f32") is T.f32


def test_attribute_printing():
    assert print_attr(1) == "1"
    assert print_attr(True) == "true"
    assert print_attr(1.0) == "1.0"
    assert print_attr(1e-05) == "1e-05"
    assert print_attr(float("inf")) == "inf"
    assert print_attr("a\"b\n") == '"a\\"b\\n"'
    assert print_attr((1, (2, 3))) == "[1, [2, 3]]"
    assert print_attr(UNIT) == "unit"
    assert print_attr(SymbolRef("main")) == "@main"
    assert print_attr(SymbolRef("has space")) == '@"has space"'
    assert print_attr(FrozenDict(a=1)) == "{a = 1}"
    assert print_attr(DialectAttr("tune.knob", ("t", (1, 2)))) == '#tune.knob<"t", [1, 2]>'
    assert print_attr(T.f32) == "f32"


def test_dense_attr_equality_and_hash():
    a = DenseAttr(np.arange(4, dtype=np.float32))
    b = DenseAttr(np.arange(4, dtype=np.float32))
    c = DenseAttr(np.arange(4, dtype=np.float32) + 1)
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert not a.array.flags.writeable


def _func(text):
    return parse_module(text).body.first


def test_use_lists_follow_replacement_and_erasure():
    m = parse_module("""
relay.func @f(%x: tensor<4xf32>) {
  %a = nn.relu(%x)
  %b = add(%a, %a)
  %c = add(%b, %x)
  return %c
}""")
    f = m.body.first
    ops = list(f.body.ops)
    relu, add1, add2, ret = ops
    x = f.body.args[0]
    assert add1.operands == [relu.result, relu.result]
    assert relu.result.uses == [add1, add1]
    assert len(x.uses) == 2
    relu.result.replace_all_uses_with(x)
    assert relu.result.uses == []
    assert add1.operands == [x, x]
    relu.erase()
    assert len(f.body) == 3
    verify(m)
    with pytest.raises(RuntimeError):
        add1.erase()  # still used


def test_block_insertion_and_iteration_survive_mutation():
    b = Block()
    c0 = ConstantOp.get(np.zeros(2, np.float32))
    c1 = ConstantOp.get(np.ones(2, np.float32))
    c2 = ConstantOp.get(np.ones(2, np.float32) * 2)
    b.append(c0)
    b.append(c2)
    b.insert_before(c2, c1)
    assert list(b.ops) == [c0, c1, c2]
    for op in b.ops:           # erasing the current op must not break iteration
        op.erase()
    assert len(b) == 0 and b.first is None and b.last is None


def test_clone_maps_values_and_keeps_names():
    m = parse_module("relay.func @f(%x: tensor<4xf32>) {\n %a = nn.relu(%x)\n %b = add(%a, %x)\n return %b\n}")
    f = m.body.first
    g = f.clone()
    g.attributes["sym_name"] = "g"
    m.body.append(g)
    verify(m)
    text = print_module(m)
    assert text.count("%a = nn.relu(%x)") == 2
    gops = list(g.body.ops)
    assert gops[1].operands[0] is gops[0].result
    assert gops[1].operands[1] is g.body.args[0]


def test_builder_infers_types():
    m = parse_module("relay.func @f(%x: tensor<2x3xf32>) {\n return %x\n}")
    f = m.body.first
    b = Builder.before(f.body.last)
    r = b.create(ReluOp, f.body.args[0], name="r")
    s = b.create(AddOp, r, f.body.args[0])
    f.body.last.set_operand(0, s)
    verify(m)
    assert "%r = nn.relu(%x) : tensor<2x3xf32>" in print_module(m)


def test_verifier_rejects_use_before_definition():
    m = parse_module("relay.func @f(%x: tensor<4xf32>) {\n %a = nn.relu(%x)\n %b = nn.relu(%a)\n return %b\n}")
    f = m.body.first
    a, b, ret = list(f.body.ops)
    b.detach()
    f.body.prepend(b)
    with pytest.raises(DiagnosticError, match="does not dominate"):
        verify(m)


def test_verifier_rejects_values_crossing_isolated_functions():
    m = parse_module("""
relay.func @f(%x: tensor<4xf32>) {
  return %x
}
relay.func @g(%y: tensor<4xf32>) {
  %a = nn.relu(%y)
  return %a
}""")
    f, g = list(m.body.ops)
    relu = g.body.first
    relu.set_operand(0, f.body.args[0])
    with pytest.raises(DiagnosticError, match="not visible"):
        verify(m)


def test_symbol_redefinition_is_an_error():
    with pytest.raises(DiagnosticError, match="redefinition of symbol '@f'"):
        parse_module("relay.func @f(%x: tensor<4xf32>) {\n return %x\n}\nrelay.func @f(%x: tensor<4xf32>) {\n return %x\n}")


class _AddSelfToMul(RewritePattern):
    """add(x, x) -> multiply(x, 2): enough to see the driver work."""
    ROOT = "relay.add"

    def match_and_rewrite(self, op, rw):
        a, b = op.operands
        if a is not b:
            return False
        from tvmd.dialects.relay.ops.elemwise import MultiplyOp
        two = ConstantOp.get(np.full(op.result.type.shape, 2, np.float32))
        rw.insert_before(op, two)
        rw.replace_op_with(op, MultiplyOp.build(a, two.result))
        return True


def test_greedy_driver_rewrites_and_removes_dead_ops():
    m = parse_module("""
relay.func @f(%x: tensor<4xf32>) {
  %dead = nn.relu(%x)
  %a = add(%x, %x)
  %b = add(%a, %a)
  return %b
}""")
    changed = apply_patterns_greedily(m, [_AddSelfToMul()])
    assert changed
    verify(m)
    text = print_module(m)
    assert "add(" not in text and "%dead" not in text
    assert text.count("multiply(") == 2
    x = np.arange(4, dtype=np.float32)
    from tvmd.dialects.relay.ops.base import RelayOp
    env = {m.body.first.body.args[0]: x}
    for op in m.body.first.body.ops:
        if isinstance(op, RelayOp):
            env[op.result] = op.compute(*[env[v] for v in op.operands])
        else:
            out = env[op.operands[0]]
    np.testing.assert_array_equal(out, x * 4)


def test_region_clone_keeps_block_structure():
    r = Region([Block([T.index], ["i"])])
    m = {}
    r2 = r.clone(m)
    assert len(r2.blocks) == 1 and r2.blocks[0].args[0].name == "i"
    assert m[r.blocks[0].args[0]] is r2.blocks[0].args[0]
