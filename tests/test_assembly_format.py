"""The declarative assembly format engine (ir/assembly_format.py and its
parser half in parser/grammar.py, parser/builder.py)."""

import pytest
from hypothesis import given, strategies as st

from tvmd.ir.assembly_format import FormatError
from tvmd.ir.attrkinds import INT, STR, optional
from tvmd.ir.core import Attr, Operation
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.printer import print_module
from tvmd.parser import parse_module


def _op(fmt, operands=("lhs", "rhs"), results=("result",), attrs=None, infer=False, **extra):
    """A nameless (so unregistered) op class with format `fmt`."""
    body = {"__slots__": (), "OPERANDS": operands, "RESULTS": results, "ATTRS": attrs or {},
            "ASSEMBLY_FORMAT": fmt, **extra}
    if infer:
        body["infer_types"] = lambda self: [self.operands[0].type]
    return type("TestOp", (Operation,), body)


# -- compiling a format ---------------------------------------------------------

@pytest.mark.parametrize("fmt, rule", [
    ("$lhs `,` $rhs attr-dict `:` type($result)", 'VALUE "," VALUE [attr_dict] ":" type'),
    ("keyword($p) `,` $lhs `,` $rhs attr-dict `:` type($lhs)", 'BARE_ID "," VALUE "," VALUE [attr_dict] ":" type'),
    ("$lhs attr-dict `:` type($lhs) `to` type($result)", None),
])
def test_rule_shape(fmt, rule):
    ops = ("lhs",) if "$rhs" not in fmt else ("lhs", "rhs")
    cls = _op(fmt, operands=ops, attrs={"p": Attr(STR)}, infer="$p" in fmt)
    f = cls._assembly_format
    if rule is not None:
        assert f.grammar == rule
    else:
        assert f.grammar == 'VALUE [attr_dict] ":" type "to" type'


def test_bracketed_variadic_operands_are_one_token():
    cls = _op("$buffer `[` $indices `]` attr-dict `:` type($result)", operands=("buffer", "*indices"))
    assert cls._assembly_format.grammar == 'VALUE INDEX_LIST [attr_dict] ":" type'
    cls = _op("$name `(` $args `)` attr-dict `:` type($result)", operands=("*args",), attrs={"name": Attr(STR)})
    assert cls._assembly_format.grammar == 'STRING VALUE_LIST [attr_dict] ":" type'
    cls = _op("$args attr-dict", operands=("*args",), results=())
    assert cls._assembly_format.grammar == '[VALUE ("," VALUE)*] [attr_dict]'


def test_optional_group_is_a_subrule():
    cls = _op("(`(` $sizes^ `)`)? attr-dict `:` type($result)", operands=("*sizes",))
    f = cls._assembly_format
    assert f.grammar == '[{group0}] [attr_dict] ":" type'
    assert f.groups[0][0] == "VALUE_LIST"


def test_generated_grammar_holds_arith_names():
    from tvmd.parser.grammar import get_parser
    text = get_parser().text
    assert 'FMT_ARITH_0 VALUE "," VALUE [attr_dict] ":" type' in text
    line = next(l for l in text.splitlines() if l.startswith("FMT_ARITH_0"))
    for n in ("addi", "subf", "floordivsi", "powf", "maximumf"):
        assert f"arith\\.{n}" in line
    import os
    import tvmd.dialects.arith as arith
    lark = open(os.path.join(os.path.dirname(arith.__file__), "arith.lark")).read()
    assert "addf" not in lark


# -- bad formats are refused when the class is defined -------------------------------

@pytest.mark.parametrize("fmt, message", [
    ("$lhs `,` $rhs `:` type($result)", "attr-dict is missing"),
    ("$lhs `,` $nope attr-dict `:` type($result)", "no operand or attribute 'nope'"),
    ("$lhs attr-dict `:` type($result)", "operand 'rhs' is not in the format"),
    ("$lhs `,` $rhs attr-dict", "nothing gives the type of result 'result'"),
    ("$lhs `,` $rhs attr-dict `:` type($result) %%", "unknown directive '%%'"),
    ("$lhs `;` $rhs attr-dict `:` type($result)", "literal `;` is not punctuation"),
    ("$lhs `,` $rhs^ attr-dict `:` type($result)", "only a variadic operand or an attribute"),
    ("$lhs `,` $rhs (`x`)? attr-dict `:` type($result)", "needs an anchor"),
    ("$lhs `,` $rhs (`x` attr-dict)? `:` type($result)", "attr-dict cannot be an optional group's anchor|"
                                                           "attr-dict cannot be inside"),
    ("$lhs `,` $lhs `,` $rhs attr-dict `:` type($result)", "'\\$lhs' appears twice"),
    ("$lhs `,` $rhs attr-dict `:` type($result) `:` type($result)", "appears twice"),
    ("$lhs `,` attr-dict `:` type($result) (`(` $rhs", "not closed"),
    ("$lhs `,` $rhs attr-dict `:` $result", "is a result"),
])
def test_bad_formats_are_rejected(fmt, message):
    with pytest.raises(FormatError, match=message):
        _op(fmt)


def test_bad_attribute_directives():
    with pytest.raises(FormatError, match=r"keyword\(\$n\) needs a string attribute"):
        _op("keyword($n) $lhs `,` $rhs attr-dict `:` type($result)", attrs={"n": Attr(INT)})
    with pytest.raises(FormatError, match="has no inline form"):
        from tvmd.ir.attrkinds import INTS
        _op("$n $lhs `,` $rhs attr-dict `:` type($result)", attrs={"n": Attr(INTS)})


def test_optional_attribute_needs_a_group():
    with pytest.raises(FormatError, match="may be unset"):
        _op("$n $lhs `,` $rhs attr-dict `:` type($result)", attrs={"n": Attr(optional(STR), None)})
    cls = _op("$lhs `,` $rhs (`tag` $n^)? attr-dict `:` type($result)", attrs={"n": Attr(optional(STR), None)})
    assert cls._assembly_format.groups[0][0] == '"tag" STRING'


def test_print_custom_and_format_conflict():
    with pytest.raises(FormatError, match="defines print_custom and has ASSEMBLY_FORMAT"):
        _op("$lhs `,` $rhs attr-dict `:` type($result)", print_custom=lambda self, p: None)
    # a subclass that prints by hand turns the inherited format off
    base = _op("$lhs `,` $rhs attr-dict `:` type($result)")
    type("Sub", (base,), {"__slots__": (), "ASSEMBLY_FORMAT": None, "print_custom": lambda self, p: None})


def test_grammar_refuses_a_format_and_a_rule_for_one_op(tmp_path, monkeypatch):
    import types
    from tvmd.parser import grammar
    from tvmd.dialects.arith.ops import AddFOp
    (tmp_path / "x.lark").write_text('x_add: "arith.addf" VALUE\n')
    mod = types.ModuleType("tvmd.dialects.x.syntax")
    mod.__file__ = str(tmp_path / "syntax.py")
    mod.GRAMMAR, mod.OP_RULES = "x.lark", ["x_add"]
    rules = grammar.format_rules([AddFOp])
    with pytest.raises(grammar.GrammarBuildError, match="'arith.addf' has an ASSEMBLY_FORMAT and a hand-written"):
        grammar.grammar_text([mod], rules)


# -- printing and parsing back ---------------------------------------------------------

ROUND = """\
tir.func @f(%A: memref<8x8xf32>, %n: index, %B: memref<8xi32>) {
  tir.for %i = 0 to 8 {
    %c = arith.constant 2 : index
    %q = arith.floordivsi %i, %c : index
    %lt = arith.cmpi slt, %q, %n : index
    %v = tir.load %A[%i, %q] : f32
    %h = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %t = arith.constant true : i1
    %inf = arith.constant -inf : f32
    %m = arith.mulf %v, %h {fastmath = "fast"} : f32
    %ng = arith.negf %m : f32
    %o = arith.cmpf olt, %m, %ng : f32
    %s = arith.select %o, %m, %ng : f32
    %e = tir.intrin "exp"(%s) : f32
    %k = arith.fptosi %e : f32 to i32
    %buf = tir.alloc {double_buffer} : memref<8xf32, "local">
    tir.store %e, %buf[%i] : f32
    tir.barrier
    tir.store %k, %B[%i] : i32
  }
}
"""


def test_round_trip_is_exact():
    m = parse_module(ROUND)
    assert print_module(m) == ROUND
    # the generic form reads back to the same custom text
    generic = print_module(m, generic=True)
    assert print_module(parse_module(generic)) == ROUND


def test_constant_takes_its_type():
    m = parse_module("%c = arith.constant 1 : f32\n%d = arith.constant 0x10 : i32\n")
    ops = list(m.body.ops)
    assert ops[0].attributes["value"] == 1.0 and type(ops[0].attributes["value"]) is float
    assert ops[1].attributes["value"] == 16
    assert print_module(m) == "%c = arith.constant 1.0 : f32\n\n%d = arith.constant 16 : i32\n"


def test_optional_group_round_trip():
    src = """\
te.func @f(%n: index) -> tensor<?x4xf32> {
  %T = te.realize (%n) {scope = "shared"} : tensor<?x4xf32>
  %U = te.realize : tensor<4xf32>
  return %T
}
"""
    m = parse_module(src, verify=False)
    assert print_module(m) == src
    realize = [op for op in m.walk() if op.name == "te.realize"]
    assert len(realize[0].operands) == 1 and realize[0].attributes["scope"] == "shared"
    assert realize[1].operands == []


def test_shared_rule_builds_the_right_class():
    from tvmd.dialects.arith.ops import AddIOp, SubIOp, MaxSIOp
    m = parse_module("tir.func @f(%a: index, %B: memref<4xf32>) {\n  %x = arith.addi %a, %a : index\n"
                     "  %y = arith.subi %x, %a : index\n  %z = arith.maxsi %y, %x : index\n}\n")
    body = [op for op in m.walk() if op.name.startswith("arith.")]
    assert [type(op) for op in body] == [AddIOp, SubIOp, MaxSIOp]


# -- errors point at the token that causes them ----------------------------------------------

def _error(src):
    with pytest.raises(DiagnosticError) as e:
        parse_module(src)
    return e.value


def test_written_operand_type_must_match():
    e = _error("tir.func @f(%a: index) {\n  %k = arith.index_cast %a : i32 to index\n}\n")
    assert "'%a' has type index, not i32" in str(e)
    assert (e.loc.line, e.loc.col) == (2, 25)


def test_undefined_operand_in_a_list():
    e = _error("tir.func @f(%A: memref<4x4xf32>, %i: index) {\n  %v = tir.load %A[%i, %j] : f32\n}\n")
    assert "undeclared SSA value name '%j'" in str(e)
    assert (e.loc.line, e.loc.col) == (2, 24)


def test_format_attribute_not_in_attr_dict():
    e = _error("tir.func @f(%a: index) {\n  %c = arith.cmpi slt, %a, %a {predicate = \"eq\"} : index\n}\n")
    assert "attribute 'predicate' is written in the op's syntax" in str(e)


def test_syntax_error_names_an_operation():
    e = _error("tir.func @f(%a: index) {\n  %c = arith.addi %a %a : index\n}\n")
    assert (e.loc.line, e.loc.col) == (2, 22)


# -- random arith ops round trip ------------------------------------------------------------

_INT_BIN = ["addi", "subi", "muli", "divsi", "remsi", "floordivsi", "floormodsi", "maxsi", "minsi",
            "andi", "ori", "xori", "shli", "shrsi"]
_FLOAT_BIN = ["addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "powf"]


@st.composite
def arith_programs(draw):
    pools = {"index": ["%n"], "i32": ["%w"], "f32": ["%x"], "i1": []}
    lines = []
    for k in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["bin", "cmp", "const", "cast", "neg", "select"]))
        r = f"%v{k}"
        if kind == "bin":
            t = draw(st.sampled_from(["index", "i32", "f32"]))
            name = draw(st.sampled_from(_FLOAT_BIN if t == "f32" else _INT_BIN))
            a, b = draw(st.sampled_from(pools[t])), draw(st.sampled_from(pools[t]))
            lines.append(f"{r} = arith.{name} {a}, {b} : {t}")
        elif kind == "cmp":
            t = draw(st.sampled_from(["index", "i32", "f32"]))
            a, b = draw(st.sampled_from(pools[t])), draw(st.sampled_from(pools[t]))
            if t == "f32":
                lines.append(f"{r} = arith.cmpf {draw(st.sampled_from(['olt', 'une', 'oge']))}, {a}, {b} : f32")
            else:
                lines.append(f"{r} = arith.cmpi {draw(st.sampled_from(['slt', 'eq', 'uge']))}, {a}, {b} : {t}")
            t = "i1"
        elif kind == "const":
            t = draw(st.sampled_from(["index", "i32", "f32", "i1"]))
            if t == "f32":
                v = draw(st.sampled_from(["0.5", "-2.0", "1e+20", "inf", "nan", "3.0"]))
            elif t == "i1":
                v = draw(st.sampled_from(["true", "false"]))
            else:
                v = str(draw(st.integers(-1000, 1000)))
            lines.append(f"{r} = arith.constant {v} : {t}")
        elif kind == "cast":
            src, dst, name = draw(st.sampled_from([("index", "i32", "index_cast"), ("i32", "index", "index_cast"),
                                                   ("i32", "f32", "sitofp"), ("f32", "i32", "fptosi")]))
            lines.append(f"{r} = arith.{name} {draw(st.sampled_from(pools[src]))} : {src} to {dst}")
            t = dst
        elif kind == "neg":
            lines.append(f"{r} = arith.negf {draw(st.sampled_from(pools['f32']))} : f32")
            t = "f32"
        else:
            if not pools["i1"]:
                continue
            t = draw(st.sampled_from(["index", "f32"]))
            c = draw(st.sampled_from(pools["i1"]))
            a, b = draw(st.sampled_from(pools[t])), draw(st.sampled_from(pools[t]))
            lines.append(f"{r} = arith.select {c}, {a}, {b} : {t}")
        pools[t].append(r)
    body = "".join(f"  {line}\n" for line in lines)
    return f"tir.func @f(%n: index, %w: i32, %x: f32, %B: memref<4xf32>) {{\n{body}}}\n"


@given(arith_programs())
def test_random_arith_round_trip(src):
    m = parse_module(src)
    assert print_module(m) == src
    assert print_module(parse_module(print_module(m, generic=True))) == src


# -- the general parse path: optional groups, bare operand lists -------------------------------

class _Tagged(Operation):
    __slots__ = ()
    name = "testfmt.tagged"
    OPERANDS = ("lhs", "*rest")
    RESULTS = ("result",)
    ATTRS = {"n": Attr(INT), "tag": Attr(optional(STR), None)}
    ASSEMBLY_FORMAT = "$n $lhs (`tag` $tag^)? (`with` $rest^)? attr-dict `:` type($result)"


class _Sum(Operation):
    __slots__ = ()
    name = "testfmt.sum"
    OPERANDS = ("*xs",)
    RESULTS = ("result",)
    ASSEMBLY_FORMAT = "$xs attr-dict `:` type($result)"


def _mini_parser():
    """A parser for core.lark plus the rules of the two test ops alone."""
    from lark import Lark
    from tvmd.parser.builder import CoreBuilder
    from tvmd.parser.grammar import format_callbacks, format_rules, grammar_text
    rules = format_rules([_Sum, _Tagged])
    builder = type("B", (CoreBuilder,), format_callbacks(rules))()
    lark = Lark(grammar_text([], rules), parser="lalr", lexer="contextual", transformer=builder,
                maybe_placeholders=False)
    return lark, builder


GENERAL = """\
%a = "testfmt.src"() : () -> f32
%r = testfmt.tagged 3 %a : f32
%s = testfmt.tagged 4 %a tag "hi" with %a, %r {x = 1} : f32
%t = testfmt.sum %a, %r, %s : f32
%u = testfmt.sum : f32
"""


def test_general_path_round_trip():
    lark, b = _mini_parser()
    b.reset("<t>", 0, None, True)
    m = lark.parse(GENERAL)
    ops = list(m.body.ops)
    assert ops[1].attributes == {"n": 3, "tag": None} and len(ops[1].operands) == 1
    assert ops[2].attributes == {"n": 4, "tag": "hi", "x": 1} and ops[2].operands[1:] == [ops[0].result, ops[1].result]
    assert len(ops[3].operands) == 3 and ops[4].operands == []
    assert print_module(m).replace("\n\n", "\n") == GENERAL
