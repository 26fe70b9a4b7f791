"""Text: exact round trips, resources, locations, and clean errors on bad input."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tvmd.ir.diagnostics import DiagnosticError, SourceManager, render
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module

RELAY = """\
relay.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %conv = nn.conv2d(%x, %w) {padding = [1, 1, 1, 1]} : tensor<1x4x8x8xf32>
  %bias = constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = nn.bias_add(%conv, %bias) : tensor<1x4x8x8xf32>
  %1 = nn.relu(%0) : tensor<1x4x8x8xf32>
  %2 = call @helper(%1) : tensor<1x4x8x8xf32>
  return %2
}

relay.func @helper(%y: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {primitive} {
  %half = constant dense<0.5> : tensor<f32>
  %0 = multiply(%y, %half) : tensor<1x4x8x8xf32>
  return %0
}
"""

TIR = """\
tir.func @k(%A: memref<4x4xf32>, %n: index, %B: memref<4x4xf32>) {
  %buf = tir.alloc : memref<16xf32, "local">
  tir.for %i = 0 to 4 parallel {
    tir.for %j = 0 to %n vectorized {
      %c = arith.cmpi slt, %j, %n : index
      tir.if %c {
        %v = tir.load %A[%i, %j] : f32
        %e = tir.intrin "exp"(%v) : f32
        %k = arith.constant 2 : index
        %q = arith.floordivsi %j, %k : index
        %f = arith.sitofp %q : index to f32
        %s = arith.addf %e, %f : f32
        tir.store %s, %B[%i, %j] : f32
      } else {
        tir.barrier
      }
    }
  }
}
"""


@pytest.mark.parametrize("text", [RELAY, TIR])
def test_canonical_text_round_trips_exactly(text):
    m = parse_module(text)
    assert print_module(m) == text
    generic = print_module(m, generic=True)
    assert '"builtin.module"()' in generic
    assert print_module(parse_module(generic)) == text
    assert print_module(parse_module(generic), generic=True) == generic


def test_user_names_survive_and_clashes_are_renamed():
    m = parse_module("relay.func @f(%x: tensor<2xf32>) {\n %x_1 = nn.relu(%x)\n %7 = nn.relu(%x_1)\n return %7\n}")
    f = m.body.first
    a, b, _ = list(f.body.ops)
    b.result.name = "x"           # a pass may hand out a name that is taken
    text = print_module(m)
    assert "%x_1 = nn.relu(%x)" in text
    assert "%x_2 = nn.relu(%x_1)" in text
    assert print_module(parse_module(text)) == text


def test_large_constants_go_to_the_resource_section_and_back():
    w = np.random.default_rng(0).standard_normal((64, 3, 3, 3)).astype(np.float32)
    from tvmd.dialects.relay.ops.function import ConstantOp
    m = parse_module("relay.func @f(%x: tensor<1x3x8x8xf32>) {\n return %x\n}")
    f = m.body.first
    c = ConstantOp.get(w, key="conv_w")
    f.body.prepend(c)
    text = print_module(m)
    assert "dense_resource<conv_w> : tensor<64x3x3x3xf32>" in text
    assert text.rstrip().endswith("#-}")
    assert len(text) < 2 * w.nbytes + 1000   # hex, not a decimal literal per element
    m2 = parse_module(text)
    c2 = m2.body.first.body.first
    np.testing.assert_array_equal(c2.attributes["value"].array, w)
    assert print_module(m2) == text


def test_special_floats_and_dtypes_in_constants():
    text = ("relay.func @f() {\n"
            "  %a = constant dense<[inf, -inf, 1.5, -0.0]> : tensor<4xf32>\n"
            "  %b = constant dense<[1, -2, 3]> : tensor<3xi8>\n"
            "  %c = constant dense<[true, false]> : tensor<2xi1>\n"
            "  %d = constant dense<0.1> : tensor<2x2xf16>\n"
            "  return %a\n}\n")
    m = parse_module(text)
    out = print_module(m)
    assert print_module(parse_module(out)) == out
    ops = list(m.body.first.body.ops)
    assert ops[0].attributes["value"].array.tolist()[:3] == [np.inf, -np.inf, 1.5]
    assert ops[1].attributes["value"].array.dtype == np.int8
    assert ops[3].attributes["value"].array.dtype == np.float16


def test_debuginfo_round_trips_locations():
    m = parse_module(RELAY, "model.relay")
    with_locs = print_module(m, debuginfo=True)
    assert 'loc("model.relay":2:11)' in with_locs
    m2 = parse_module(with_locs, "other.relay")
    assert print_module(m2, debuginfo=True) == with_locs


def test_multiple_results_and_packs():
    text = ('%a, %b = "test.two"() : () -> (i32, f32)\n'
            '%r:2 = "test.two"() : () -> (i32, f32)\n'
            '"test.use"(%a, %b, %r#0, %r#1) : (i32, f32, i32, f32) -> ()\n')
    m = parse_module(text, allow_unregistered=True)
    ops = list(m.body.ops)
    assert ops[2].operands == ops[0].results + ops[1].results
    with pytest.raises(DiagnosticError, match="unregistered operation 'test.two'"):
        parse_module(text)


def _err(text, **kw):
    with pytest.raises(DiagnosticError) as e:
        parse_module(text, "in.relay", **kw)
    d = e.value.diagnostics[0]
    src = SourceManager()
    src.add("in.relay", text)
    return d, render(d, src)


def test_error_points_at_the_undeclared_value():
    d, shown = _err("relay.func @f(%x: tensor<4xf32>) {\n  %0 = add(%x, %y)\n  return %0\n}\n")
    assert d.loc.file_line_col() == ("in.relay", 2, 16)
    assert shown.splitlines() == ["in.relay:2:16: error: use of undeclared SSA value name '%y'",
                                  "  %0 = add(%x, %y)", "               ^"]


@pytest.mark.parametrize("text,where,what", [
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x)\n", (2, 19), "unexpected end of file"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x) ?\n  return %0\n}", (2, 20), "unexpected '?'"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x) §\n}", (2, 20), "unexpected character '§'"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x) : tensor<4xi32>\n  return %0\n}", (2, 8),
     "does not match the inferred type"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.dense(%x, %x)\n  return %0\n}", (2, 8), "2-d weight"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %x = nn.relu(%x)\n  return %x\n}", (2, 3), "redefinition"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x) {alpha = [}\n  return %0\n}", (2, 30), "unexpected"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.conv2d(%x, %x) {strides = \"a\"}\n  return %0\n}", (2, 8),
     "attribute 'strides'"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %c = constant dense<[1.0, 2.0]> : tensor<3xf32>\n  return %x\n}", (2, 17),
     "dense literal"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  %c = constant dense_resource<nope> : tensor<3xf32>\n  return %x\n}",
     (2, 32), "no resource named 'nope'"),
    ("relay.func @f(%x: tensor<4xf32>) {\n  return %x\n}\n{-#\n  dialect_resources: {\n    builtin: {\n"
     "      a: \"0x04000000ZZ\"\n    }\n  }\n#-}\n", (7, 10), "non-hex"),
    ('"relay.nn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n', (1, 17), "undeclared"),
])
def test_bad_input_gets_a_positioned_diagnostic(text, where, what):
    d, shown = _err(text)
    assert d.loc.file_line_col()[1:] == where, shown
    assert what in d.message, shown
    assert shown.splitlines()[-1].strip() == "^"


def test_deep_nesting_is_refused_cleanly():
    deep = "relay.func @f(%x: tensor<4xf32>) {\n  %0 = nn.relu(%x) {a = " + "[" * 10000 + "]" * 10000 + "}\n  return %0\n}"
    d, _ = _err(deep)
    assert "nesting deeper than" in d.message


def test_empty_file_is_an_empty_module():
    m = parse_module("")
    assert len(m.body) == 0
    assert print_module(m) == ""


def test_tir_type_errors_at_the_op():
    d, _ = _err("tir.func @k(%A: memref<4xf32>) {\n  tir.for %i = 0 to 4 {\n    %v = tir.load %A[%i] : i32\n  }\n}\n")
    assert d.loc.file_line_col()[1:] == (3, 10)
    assert "does not match buffer element type" in d.message


SEEDS = [RELAY, TIR]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "swap"]))
        i = draw(st.integers(0, max(len(text) - 1, 0)))
        if kind == "delete":
            j = draw(st.integers(i, min(len(text), i + 12)))
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(
                ["%", "@", "{", "}", "[", "]", "(", ")", "<", ">", ":", ",", "=", "\"", "#", "^bb1:", "-1", "1e9",
                 "\x00", "é", "tensor<", "?", "dense<", "->", "loc(", "!", "{-#", "return ", "call @f()"])) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.characters()) + text[i + 1:]
        elif kind == "truncate":
            text = text[:i]
        else:
            j = draw(st.integers(0, max(len(text) - 1, 0)))
            lines = text.split("\n")
            a, b = i % len(lines), j % len(lines)
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text


@given(mutated())
def test_mutated_input_never_crashes(text):
    """Any input either parses (and then round-trips) or raises a
    DiagnosticError with a position: never another exception."""
    try:
        m = parse_module(text, "fuzz.relay")
    except DiagnosticError as e:
        for d in e.diagnostics:
            src = SourceManager()
            src.add("fuzz.relay", text)
            render(d, src)
        return
    out = print_module(m)
    assert print_module(parse_module(out)) == out


def test_comments_never_become_tokens():
    """A comment between any two lines, holding text that would lex as
    tokens (found: the lexer backtracked into '// ...Traceback')."""
    noise = "// Traceback raceback %x @y { } ( ) : f32 tensor<4xf32> \"s\" -> return"
    for seed in SEEDS:
        lines = seed.split("\n")
        commented = "\n".join(x for line in lines for x in (line, noise)) + "\n" + noise
        assert print_module(parse_module(commented)) == seed


def test_relay_function_with_several_results_round_trips():
    text = ("relay.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
            "  %a = nn.relu(%x) : tensor<4xf32>\n  return %a, %x\n}\n")
    m = parse_module(text)
    assert print_module(m) == text
    assert len(m.body.first.attributes["function_type"].results) == 2
    assert print_module(parse_module(print_module(m, generic=True))) == text
