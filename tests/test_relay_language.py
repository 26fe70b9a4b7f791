"""Relay the language: if, closures, calls of function values, ADTs, match,
recursion and dynamic dimensions -- text, types, interpreter, dce/cse."""

import numpy as np
import pytest

from tvmd.dialects.relay.interpreter import ConValue, list_items, make_list, run_function
from tvmd.dialects.relay.types import ADTType
from tvmd.ir import types as T
from tvmd.ir.diagnostics import DiagnosticError
from tvmd.ir.pass_manager import PassManager, instantiate, parse_pipeline
from tvmd.ir.printer import print_module
from tvmd.ir.registry import get_pass_class
from tvmd.parser import parse_module

LIST = """relay.adt @List<A> {
  Cons(!A, !relay.adt<@List<!A>>),
  Nil
}
"""
LI32 = "!relay.adt<@List<tensor<i32>>>"


def parse(text):
    return parse_module(text, "t.relay")


def canon(text):
    return print_module(parse(text))


def run_passes(text, pipeline):
    m = parse(text)
    PassManager(instantiate(parse_pipeline(pipeline), get_pass_class)).run(m)
    return m


def diag(text, pipeline=None):
    """The diagnostic parsing `text` (and running `pipeline`) raises."""
    with pytest.raises(Exception) as e:
        if pipeline:
            run_passes(text, pipeline)
        else:
            parse(text)
    d = getattr(e.value, "exc", e.value)   # a pass's error comes wrapped in PassFailure
    assert isinstance(d, DiagnosticError), repr(d)
    return d


def i32(x):
    return np.array(x, dtype=np.int32)


# -- text: every construct prints and parses back exactly -------------------------

CANONICAL = [
    # if, with a dynamic result the branches refine
    """relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %r = if %c : tensor<?xf32> {
    %a = nn.relu(%x) : tensor<4xf32>
    yield %a
  } else {
    yield %y
  }
  return %r
}
""",
    # closures: capture, call, returned, a closure of a closure, a global as a value
    """relay.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = fn (%y: tensor<4xf32>) -> tensor<4xf32> {
    %v = add(%x, %y) : tensor<4xf32>
    return %v
  }
  %r = call %f(%x) : tensor<4xf32>
  %h = constant @g : (tensor<4xf32>) -> tensor<4xf32>
  %k = fn (%z: tensor<4xf32>) -> (tensor<4xf32>) -> tensor<4xf32> {
    %inner = fn (%w: tensor<4xf32>) -> tensor<4xf32> {
      %s = multiply(%z, %w) : tensor<4xf32>
      return %s
    }
    return %inner
  }
  %k2 = call %k(%r) : (tensor<4xf32>) -> tensor<4xf32>
  %r2 = call %k2(%x) : tensor<4xf32>
  return %r2
}
""",
    # higher-order global function: a function-typed parameter
    """relay.func @apply(%f: (tensor<2xf32>) -> tensor<2xf32>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = call %f(%x) : tensor<2xf32>
  return %r
}
""",
    # tuples of anything, projections
    """relay.func @t(%x: tensor<2xf32>) -> tensor<2xf32> {
  %f = fn (%y: tensor<2xf32>) -> tensor<2xf32> {
    return %y
  }
  %t = tuple(%x, %f) : tuple<tensor<2xf32>, (tensor<2xf32>) -> tensor<2xf32>>
  %g = get_item(%t) {index = 1} : (tensor<2xf32>) -> tensor<2xf32>
  %r = call %g(%x) : tensor<2xf32>
  return %r
}
""",
    # ADTs: parametric, recursive, nullary, empty, two parameters, nested types
    LIST + """
relay.adt @Nat {
  Z,
  S(!relay.adt<@Nat>)
}

relay.adt @Void {}

relay.adt @Pair<A, B> {
  MkPair(!A, !B)
}

relay.adt @Rose<A> {
  Node(!A, !relay.adt<@List<!relay.adt<@Rose<!A>>>>)
}

relay.func @m(%l: !relay.adt<@List<tensor<i32>>>, %p: !relay.adt<@Pair<tensor<i32>, tuple<tensor<i32>, tensor<i32>>>>) -> tensor<i32> {
  %n = Nil : !relay.adt<@List<tensor<i32>>>
  %z = constant dense<0> : tensor<i32>
  %l2 = Cons(%z, %n) : !relay.adt<@List<tensor<i32>>>
  %r = match %l : tensor<i32> {
    Cons(%h, Cons(_, %rest)) => {
      yield %h
    }
    Cons(%h, Nil) => {
      yield %h
    }
    %other => {
      %q = match %p : tensor<i32> {
        MkPair(_, (%a, _)) => {
          yield %a
        }
      }
      yield %q
    }
  }
  %s = match? %l2 : tensor<i32> {
    Cons(%h, _) => {
      yield %h
    }
  }
  %t = add(%r, %s) : tensor<i32>
  return %t
}
""",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_constructs_round_trip_exactly(text):
    assert canon(text) == text
    # the generic form reads back to the same IR
    generic = print_module(parse(text), generic=True)
    assert print_module(parse(generic)) == text
    assert print_module(parse(generic), generic=True) == generic


def test_types_left_out_are_inferred_while_parsing():
    text = LIST + """relay.func @f(%c: tensor<i1>, %x: tensor<i32>) {
  %n = Nil : !relay.adt<@List<tensor<i32>>>
  %l = Cons(%x, %n)
  %f = fn (%y: tensor<i32>) {
    return %y
  }
  %a = call %f(%x)
  %r = if %c {
    yield %a
  } else {
    %b = match %l {
      Cons(%h, _) => { yield %h }
      Nil => { yield %x }
    }
    yield %b
  }
  return %r
}"""
    out = canon(text)
    assert f"%l = Cons(%x, %n) : {LI32}" in out
    assert "%f = fn (%y: tensor<i32>) -> tensor<i32> {" in out
    assert "%a = call %f(%x) : tensor<i32>" in out
    assert "%r = if %c : tensor<i32> {" in out
    assert "%b = match %l : tensor<i32> {" in out
    assert canon(out) == out


def test_adt_type_is_interned_and_parsed_by_the_type_parser():
    t = T.parse_type("!relay.adt<@List< tensor<f32> >>")
    assert t is ADTType("List", [T.TensorType((), T.f32)])
    assert str(t) == "!relay.adt<@List<tensor<f32>>>"
    assert T.parse_type("!relay.adt<@Nat>") is ADTType("Nat")
    assert T.parse_type('!relay.adt<@"my list"<i32>>') is ADTType("my list", [T.i32])


def test_one_line_forms_parse():
    text = LIST + """relay.func @f(%l: !relay.adt<@List<tensor<i32>>>) -> tensor<i32> {
  %r = match %l : tensor<i32> { Cons(%h, _) => { yield %h } Nil => { %z = constant dense<0> : tensor<i32>
    yield %z } }
  return %r
}"""
    assert "Nil => {" in canon(text)
    assert "relay.adt @Opt<T> {\n  Some(!T),\n  None\n}" in canon("relay.adt @Opt<T> { Some(!T), None }")


def test_names_of_sibling_regions_may_repeat_and_print_as_written():
    text = """relay.func @f(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %r = if %c : tensor<2xf32> {
    %v = nn.relu(%x) : tensor<2xf32>
    yield %v
  } else {
    %v = negative(%x) : tensor<2xf32>
    yield %v
  }
  return %r
}
"""
    assert canon(text) == text


# -- errors while parsing and verifying, at the offending token -------------------

def test_error_if_branches_of_different_types():
    e = diag("""relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>, %y: tensor<3xf32>) {
  %r = if %c {
    yield %x
  } else {
    yield %y
  }
  return %r
}""")
    assert "yields tensor<3xf32>, but an earlier branch" in str(e)
    assert (e.loc.line, e.loc.col) == (5, 5)


def test_error_declared_if_type_and_branch():
    e = diag("""relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>) {
  %r = if %c : tensor<3xf32> {
    yield %x
  } else {
    yield %x
  }
  return %r
}""")
    assert "yields tensor<4xf32>, but the 'relay.if' result is tensor<3xf32>" in str(e) and e.loc.line == 3


@pytest.mark.parametrize("cond, msg", [
    ("%x", "condition must be a scalar boolean (tensor<i1>), got tensor<4xf32>"),
    ("%v", "condition must be a scalar boolean (tensor<i1>), got tensor<2xi1>"),
])
def test_error_condition_type(cond, msg):
    e = diag(f"""relay.func @f(%x: tensor<4xf32>, %v: tensor<2xi1>) {{
  %r = if {cond} {{ yield %x }} else {{ yield %x }}
  return %r
}}""")
    assert msg in str(e) and e.loc.line == 2


def test_error_return_inside_a_branch_and_yield_inside_a_closure():
    e = diag("""relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>) {
  %r = if %c {
    return %x
  } else {
    yield %x
  }
  return %r
}""")
    assert "must end with 'yield', not 'relay.return'" in str(e) and e.loc.line == 3
    e = diag("""relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>) {
  %r = if %c {
    %g = fn (%y: tensor<4xf32>) {
      yield %y
    }
    yield %x
  } else {
    yield %x
  }
  return %r
}""")
    assert "the body of a 'fn' must end with 'return'" in str(e) and e.loc.line == 4


def test_error_closure_called_with_wrong_arguments():
    base = """relay.func @f(%x: tensor<4xf32>, %z: tensor<3xf32>) {
  %f = fn (%y: tensor<4xf32>) { return %y }
  %r = CALL
  return %r
}"""
    e = diag(base.replace("CALL", "call %f(%x, %x)"))
    assert "passes 2 argument(s) to a function of type (tensor<4xf32>) -> tensor<4xf32>" in str(e)
    assert e.loc.line == 3
    e = diag(base.replace("CALL", "call %f(%z)"))
    assert "argument 0 has type tensor<3xf32> but the function takes tensor<4xf32>" in str(e)
    e = diag(base.replace("CALL", "call %x(%z)"))
    assert "'%x' has type tensor<4xf32>, which is not a function" in str(e) and e.loc.col == 13


def test_error_closure_cannot_see_inner_names_and_functions_stay_isolated():
    e = diag("""relay.func @f(%x: tensor<4xf32>) {
  %f = fn (%y: tensor<4xf32>) { return %y }
  return %y
}""")
    assert "undeclared SSA value name '%y'" in str(e)
    e = diag("""relay.func @f(%x: tensor<4xf32>) {
  %f = fn (%y: tensor<4xf32>) { return %x }
  return %x
}
relay.func @g(%q: tensor<4xf32>) {
  return %x
}""")
    assert "undeclared SSA value name '%x'" in str(e) and e.loc.line == 6


def test_error_match_arm_with_wrong_constructor_arity_points_at_the_pattern():
    e = diag(LIST + """relay.func @f(%l: !relay.adt<@List<tensor<i32>>>) {
  %r = match %l {
    Cons(%h, Cons(%a)) => { yield %h }
    _ => { yield %h }
  }
  return %r
}""")
    assert "constructor Cons of @List has 2 field(s), the pattern gives 1" in str(e)
    assert (e.loc.line, e.loc.col) == (7, 14)


def test_error_pattern_of_another_type():
    e = diag(LIST + """relay.adt @Opt<A> { Some(!A), None }
relay.func @f(%l: !relay.adt<@List<tensor<i32>>>, %t: tuple<tensor<i32>>) {
  %r = match %l {
    Some(%h) => { yield %h }
  }
  %s = match %t {
    (%a, %b) => { yield %a }
  }
  return %r
}""")
    assert "Some is a constructor of @Opt, but the value has type !relay.adt<@List<tensor<i32>>>" in str(e)
    assert (e.loc.line, e.loc.col) == (8, 5)


def test_error_unknown_constructor_and_definition_order():
    e = diag("""relay.func @f(%x: tensor<i32>) {
  %l = Cons(%x)
  return %l
}""")
    assert "unknown constructor 'Cons'" in str(e) and e.loc.line == 2
    assert "define its relay.adt before" in str(e)


@pytest.mark.parametrize("arms, witness", [
    ("Cons(%h, Cons(_, _)) => { yield %h }\n    Nil => { yield %z }", "Cons(_, Nil)"),
    ("Cons(%h, _) => { yield %h }", "Nil"),
    ("Nil => { yield %z }\n    Cons(%h, Nil) => { yield %h }", "Cons(_, Cons(_, _))"),
])
def test_error_non_exhaustive_match_names_a_missing_case(arms, witness):
    e = diag(LIST + f"""relay.func @f(%l: !relay.adt<@List<tensor<i32>>>, %z: tensor<i32>) {{
  %r = match %l {{
    {arms}
  }}
  return %r
}}""")
    assert f"is not exhaustive: no arm matches {witness}" in str(e) and e.loc.line == 6
    assert "match?" in str(e)


def test_exhaustive_matches_are_accepted():
    ok = [
        "Cons(%h, _) => { yield %h }\n    Nil => { yield %z }",
        "Nil => { yield %z }\n    Cons(%h, Nil) => { yield %h }\n    Cons(_, Cons(%h, _)) => { yield %h }",
        "_ => { yield %z }",
        "%all => { yield %z }",
    ]
    for arms in ok:
        parse(LIST + f"""relay.func @f(%l: !relay.adt<@List<tensor<i32>>>, %z: tensor<i32>) {{
  %r = match %l {{
    {arms}
  }}
  return %r
}}""")
    # tuples of ADTs, and an ADT without constructors needs no arm
    parse(LIST + """relay.adt @Void {}
relay.func @f(%p: tuple<!relay.adt<@List<tensor<i32>>>, !relay.adt<@List<tensor<i32>>>>, %v: !relay.adt<@Void>, %z: tensor<i32>) {
  %r = match %p {
    (Nil, _) => { yield %z }
    (_, Nil) => { yield %z }
    (Cons(%a, _), Cons(_, _)) => { yield %a }
  }
  %s = match %v : tensor<i32> {
  }
  return %r
}""")
    e = diag(LIST + """relay.func @f(%p: tuple<!relay.adt<@List<tensor<i32>>>, !relay.adt<@List<tensor<i32>>>>, %z: tensor<i32>) {
  %r = match %p {
    (Nil, _) => { yield %z }
    (Cons(%a, _), Cons(_, _)) => { yield %a }
  }
  return %r
}""")
    assert "no arm matches (Cons(_, _), Nil)" in str(e)


def test_error_adt_definitions():
    e = diag("relay.adt @L<A> { Cons(!B) }")
    assert "field 0 of Cons mentions !B, which is not a type parameter of @L" in str(e)
    e = diag("relay.adt @A { X }\nrelay.adt @B { Y, X }")
    assert "constructor 'X' is already defined by @A" in str(e) and e.loc.line == 2
    e = diag("relay.adt @A { X, X }")
    assert "constructor 'X' is defined twice" in str(e)
    e = diag("relay.adt @A { X(!relay.adt<@Nope>) }")
    assert "there is no relay.adt @Nope" in str(e)
    e = diag("relay.adt @A<T> { X(!relay.adt<@A>) }")
    assert "gives @A 0 type argument(s), it takes 1" in str(e)


def test_error_constructor_arguments():
    e = diag(LIST + """relay.func @f(%x: tensor<i32>, %y: tensor<f32>) {
  %n = Nil : !relay.adt<@List<tensor<i32>>>
  %l = Cons(%y, %n)
  return %l
}""")
    assert "field 1 of Cons is !relay.adt<@List<tensor<f32>>>, but the argument is" in str(e) and e.loc.line == 7
    e = diag(LIST + """relay.func @f(%x: tensor<i32>) {
  %l = Cons(%x)
  return %l
}""")
    assert "constructor Cons of @List takes 2 field(s), got 1" in str(e)


def test_error_nil_needs_its_type():
    e = diag(LIST + """relay.func @f(%x: tensor<i32>) {
  %l = Nil
  return %l
}""")
    assert "cannot tell the type argument !A of @List from the arguments of Nil" in str(e)
    assert e.loc.line == 6


def test_error_func_ref_to_something_else():
    e = diag("""relay.func @f(%x: tensor<i32>) {
  %g = constant @nothing
  return %x
}""")
    assert "'@nothing' does not reference a function" in str(e)


# -- --infer-type -------------------------------------------------------------------

def test_infer_type_through_regions_and_closures():
    text = LIST + """relay.func @main(%x: tensor<2xf32>, %c: tensor<i1>) {
  %l = call @mk(%x)
  %r = match %l {
    Cons(%h, Cons(%h2, _)) => {
      %s = add(%h, %h2)
      yield %s
    }
    _ => { yield %x }
  }
  %f = fn (%y: tensor<2xf32>) {
    %v = call @mk(%y)
    return %v
  }
  %q = call %f(%r)
  %g = constant @mk
  %i = if %c {
    %z = call %g(%x)
    yield %z
  } else {
    yield %q
  }
  return %i
}
relay.func @mk(%a: tensor<2xf32>) {
  %n = Nil : !relay.adt<@List<tensor<2xf32>>>
  %l = Cons(%a, %n)
  return %l
}"""
    m = run_passes(text, "infer-type")
    out = print_module(m)
    L = "!relay.adt<@List<tensor<2xf32>>>"
    assert f"relay.func @main(%x: tensor<2xf32>, %c: tensor<i1>) -> {L} {{" in out
    assert "%s = add(%h, %h2) : tensor<2xf32>" in out
    assert f"%f = fn (%y: tensor<2xf32>) -> {L} {{" in out
    assert f"%g = constant @mk : (tensor<2xf32>) -> {L}" in out
    assert f"%i = if %c : {L} {{" in out
    assert canon(out) == out
    # the binders got their types
    match = next(op for op in m.walk() if op.name == "relay.match")
    assert [str(a.type) for a in match.regions[0].blocks[0].args] == ["tensor<2xf32>"] * 2
    x = np.array([1, 2], np.float32)
    v = run_function(m, "main", x, np.array(False))
    assert [list(a) for a in list_items(v)] == [[1, 2]]   # mk makes one item: the `_` arm


def test_infer_type_reports_branches_that_disagree_once_known():
    e = diag("""relay.func @main(%c: tensor<i1>, %x: tensor<4xf32>) {
  %a = call @later(%x)
  %r = if %c {
    yield %a
  } else {
    yield %x
  }
  return %r
}
relay.func @later(%y: tensor<4xf32>) {
  %z = constant dense<1.0> : tensor<3xf32>
  return %z
}""", "infer-type")
    assert "yields tensor<4xf32>, but an earlier branch of the 'relay.if' yields tensor<3xf32>" in str(e)
    assert e.loc.line == 6


def test_infer_type_reports_patterns_once_the_type_is_known():
    e = diag(LIST + """relay.adt @Opt<A> { Some(!A), None }
relay.func @main(%x: tensor<4xf32>) {
  %a = call @later(%x)
  %r = match %a {
    Some(%v) => { yield %v }
    None => { yield %x }
  }
  return %r
}
relay.func @later(%y: tensor<4xf32>) {
  %n = Nil : !relay.adt<@List<tensor<4xf32>>>
  return %n
}""", "infer-type")
    assert "arm 0 (Some(%v)): Some is a constructor of @Opt" in str(e) and e.loc.line == 8


def test_infer_type_closure_from_a_call_with_wrong_arguments():
    e = diag("""relay.func @main(%x: tensor<4xf32>) {
  %f = call @mkf(%x)
  %r = call %f(%x, %x)
  return %r
}
relay.func @mkf(%y: tensor<4xf32>) {
  %f = fn (%z: tensor<4xf32>) { return %y }
  return %f
}""", "infer-type")
    assert "passes 2 argument(s)" in str(e) and e.loc.line == 3


def test_infer_type_recursion_through_a_function_value_needs_a_declared_result():
    e = diag("""relay.func @f(%x: tensor<2xf32>) {
  %g = constant @f
  %y = call %g(%x)
  return %y
}""", "infer-type")
    assert "refers to @f recursively" in str(e) and e.loc.line == 2
    m = run_passes("""relay.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %g = constant @f
  %y = call %g(%x)
  return %y
}""", "infer-type")
    assert "%g = constant @f : (tensor<2xf32>) -> tensor<2xf32>" in print_module(m)


def test_infer_type_keeps_a_declared_less_precise_type():
    m = run_passes("""relay.func @f(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<?xf32> {
  %r = if %c : tensor<?xf32> { yield %x } else { yield %x }
  return %r
}""", "infer-type")
    assert "%r = if %c : tensor<?xf32> {" in print_module(m)


# -- the interpreter ------------------------------------------------------------------

COUNTDOWN = """relay.func @count(%n: tensor<i32>, %acc: tensor<i32>) -> tensor<i32> {
  %zero = constant dense<0> : tensor<i32>
  %more = greater(%n, %zero)
  %r = if %more {
    %one = constant dense<1> : tensor<i32>
    %m = subtract(%n, %one)
    %acc2 = add(%acc, %n)
    %v = call @count(%m, %acc2) : tensor<i32>
    yield %v
  } else {
    yield %acc
  }
  return %r
}
"""


def test_recursive_countdown_with_if_runs_deep():
    m = parse(COUNTDOWN)
    assert int(run_function(m, "count", i32(10), i32(0))) == 55
    # far deeper than Python's recursion limit: the interpreter's stack is its own
    assert int(run_function(m, "count", i32(3000), i32(0))) == 3000 * 3001 // 2


def test_unbounded_recursion_is_an_error_at_the_call():
    # %acc never changes: 1 > 0 for ever
    m = parse(COUNTDOWN.replace("%more = greater(%n, %zero)", "%more = greater(%acc, %zero)")
              .replace("%acc2 = add(%acc, %n)", "%acc2 = add(%acc, %zero)"))
    with pytest.raises(DiagnosticError) as e:
        run_function(m, "count", i32(0), i32(1))
    assert "call depth exceeds" in str(e.value) and e.value.loc.line == 8


SUM = LIST + """relay.func @sum(%xs: !relay.adt<@List<tensor<i32>>>) -> tensor<i32> {
  %r = match %xs {
    Cons(%h, %t) => {
      %s = call @sum(%t) : tensor<i32>
      %a = add(%h, %s)
      yield %a
    }
    Nil => {
      %z = constant dense<0> : tensor<i32>
      yield %z
    }
  }
  return %r
}

relay.func @map(%f: (tensor<i32>) -> tensor<i32>, %xs: !relay.adt<@List<tensor<i32>>>) -> !relay.adt<@List<tensor<i32>>> {
  %r = match %xs {
    Cons(%h, %t) => {
      %h2 = call %f(%h)
      %t2 = call @map(%f, %t) : !relay.adt<@List<tensor<i32>>>
      %l = Cons(%h2, %t2)
      yield %l
    }
    Nil => {
      yield %xs
    }
  }
  return %r
}

relay.func @main(%xs: !relay.adt<@List<tensor<i32>>>, %k: tensor<i32>) -> tensor<i32> {
  %scale = fn (%v: tensor<i32>) {
    %m = multiply(%v, %k)
    return %m
  }
  %ys = call @map(%scale, %xs)
  %s = call @sum(%ys)
  return %s
}
"""


def test_summing_a_list_and_mapping_a_closure():
    m = parse(SUM)
    xs = make_list([i32(i) for i in range(1, 101)])
    assert int(run_function(m, "sum", xs)) == 5050
    assert int(run_function(m, "main", xs, i32(3))) == 3 * 5050
    big = make_list([i32(1)] * 4000)
    assert int(run_function(m, "sum", big)) == 4000
    ys = run_function(m, "map", parse_closure_id(m), make_list([i32(5), i32(6)]))
    assert [int(v) for v in list_items(ys)] == [5, 6]


def parse_closure_id(m):
    """A function value made by the interpreter from relay text."""
    from tvmd.dialects.relay.interpreter import Closure
    helper = parse("""relay.func @id(%x: tensor<i32>) -> tensor<i32> { return %x }""")
    return Closure(helper.body.first)


def test_closures_capture_their_environment_and_escape():
    m = parse("""relay.func @adder(%k: tensor<2xf32>) -> (tensor<2xf32>) -> tensor<2xf32> {
  %f = fn (%x: tensor<2xf32>) {
    %y = add(%x, %k)
    return %y
  }
  return %f
}
relay.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %add_a = call @adder(%a)
  %add_b = call @adder(%b)
  %p = call %add_a(%b)
  %q = call %add_b(%p)
  return %q
}""")
    a, b = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    assert list(run_function(m, "main", a, b)) == [21, 42]


def test_nested_and_tuple_patterns_bind_in_order():
    m = parse(LIST + """relay.func @f(%l: !relay.adt<@List<tuple<tensor<i32>, tensor<i32>>>>) -> tensor<i32> {
  %r = match %l {
    Cons((%a, %b), Cons((_, %c), _)) => {
      %s = subtract(%a, %b)
      %t = multiply(%s, %c)
      yield %t
    }
    Cons((%a, _), Nil) => { yield %a }
    Nil => {
      %z = constant dense<-1> : tensor<i32>
      yield %z
    }
  }
  return %r
}""")
    two = make_list([(i32(7), i32(2)), (i32(0), i32(10))])
    assert int(run_function(m, "f", two)) == 50
    assert int(run_function(m, "f", make_list([(i32(4), i32(9))]))) == 4
    assert int(run_function(m, "f", make_list([]))) == -1


def test_partial_match_without_a_matching_arm_fails_at_the_match():
    m = parse(LIST + """relay.func @head(%l: !relay.adt<@List<tensor<i32>>>) -> tensor<i32> {
  %r = match? %l {
    Cons(%h, _) => { yield %h }
  }
  return %r
}""")
    assert int(run_function(m, "head", make_list([i32(3)]))) == 3
    with pytest.raises(DiagnosticError) as e:
        run_function(m, "head", make_list([]))
    assert "no arm matches the value Nil" in str(e.value) and e.value.loc.line == 6


def test_adt_values_go_in_and_come_out():
    m = parse(LIST + """relay.func @push(%x: tensor<i32>, %l: !relay.adt<@List<tensor<i32>>>) -> !relay.adt<@List<tensor<i32>>> {
  %r = Cons(%x, %l)
  return %r
}""")
    out = run_function(m, "push", i32(1), make_list([i32(2)]))
    assert isinstance(out, ConValue) and out == make_list([i32(1), i32(2)])
    assert repr(make_list([i32(2)])) == "Cons(array(2, dtype=int32), Nil)"


def test_peano_numbers():
    m = parse("""relay.adt @Nat {
  Z,
  S(!relay.adt<@Nat>)
}
relay.func @to_int(%n: !relay.adt<@Nat>) -> tensor<i32> {
  %r = match %n {
    S(%p) => {
      %k = call @to_int(%p) : tensor<i32>
      %one = constant dense<1> : tensor<i32>
      %v = add(%k, %one)
      yield %v
    }
    Z => {
      %z = constant dense<0> : tensor<i32>
      yield %z
    }
  }
  return %r
}
relay.func @add(%a: !relay.adt<@Nat>, %b: !relay.adt<@Nat>) -> !relay.adt<@Nat> {
  %r = match %a {
    Z => { yield %b }
    S(%p) => {
      %s = call @add(%p, %b) : !relay.adt<@Nat>
      %v = S(%s)
      yield %v
    }
  }
  return %r
}
relay.func @main() -> tensor<i32> {
  %z = Z
  %one = S(%z)
  %two = S(%one)
  %three = call @add(%one, %two)
  %i = call @to_int(%three)
  return %i
}""")
    assert int(run_function(m, "main")) == 3


def test_dynamic_sequence_length_types_and_runs():
    text = """relay.func @encoder(%x: tensor<1x?x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) {
  %d = nn.dense(%x, %w)
  %a = add(%d, %b)
  %r = nn.relu(%a)
  %t = transpose(%r) {axes = [0, 2, 1]}
  %m = nn.batch_matmul(%r, %t) {transpose_b = false}
  return %m
}"""
    m = run_passes(text, "infer-type")
    out = print_module(m)
    assert "relay.func @encoder(%x: tensor<1x?x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<1x?x?xf32>" in out
    assert "%d = nn.dense(%x, %w) : tensor<1x?x16xf32>" in out
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    for seq in (3, 7):
        x = rng.standard_normal((1, seq, 16)).astype(np.float32)
        r = np.maximum(x @ w.T + b, 0)
        got = run_function(m, "encoder", x, w, b)
        assert got.shape == (1, seq, seq)
        np.testing.assert_allclose(got, r @ r.transpose(0, 2, 1), rtol=1e-5)


def test_dynamic_dims_in_branches_and_adts():
    m = run_passes(LIST + """relay.func @f(%c: tensor<i1>, %x: tensor<?x2xf32>, %y: tensor<3x2xf32>) {
  %r = if %c {
    yield %x
  } else {
    yield %y
  }
  %n = Nil : !relay.adt<@List<tensor<?x2xf32>>>
  %l = Cons(%y, %n)
  %l2 = Cons(%r, %l)
  return %l2
}""", "infer-type")
    out = print_module(m)
    assert "%r = if %c : tensor<?x2xf32> {" in out
    assert "%l = Cons(%y, %n) : !relay.adt<@List<tensor<?x2xf32>>>" in out
    x = np.ones((5, 2), np.float32)
    y = np.zeros((3, 2), np.float32)
    v = run_function(m, "f", np.array(True), x, y)
    assert [a.shape for a in list_items(v)] == [(5, 2), (3, 2)]


def test_interpreter_checks_dynamic_shapes_against_static_ones():
    m = parse("""relay.func @f(%x: tensor<?x2xf32>) -> tensor<?x2xf32> { return %x }""")
    with pytest.raises(DiagnosticError, match="shape"):
        run_function(m, "f", np.ones((3, 3), np.float32))


# -- dce and cse in regions -----------------------------------------------------------

def test_dce_in_regions_and_of_unused_language_ops():
    text = """relay.func @f(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %dead_if = if %c {
    %u = nn.relu(%x)
    yield %u
  } else {
    yield %x
  }
  %dead_fn = fn (%y: tensor<2xf32>) {
    return %y
  }
  %r = if %c {
    %dead = negative(%x)
    %v = nn.relu(%x)
    yield %v
  } else {
    yield %x
  }
  return %r
}"""
    m = run_passes(text, "dce")
    out = print_module(m)
    assert "dead" not in out and "%u" not in out
    assert "%v = nn.relu(%x)" in out


def test_dce_keeps_what_a_closure_uses():
    m = run_passes("""relay.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %k = negative(%x)
  %f = fn (%y: tensor<2xf32>) {
    %s = add(%y, %k)
    return %s
  }
  %r = call %f(%x)
  return %r
}""", "dce")
    assert "%k = negative(%x)" in print_module(m)


def test_cse_reuses_dominating_values_but_not_sibling_branches():
    text = """relay.func @f(%c: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %a = nn.relu(%x)
  %r = if %c {
    %b = nn.relu(%x)
    %n = negative(%b)
    yield %n
  } else {
    %n2 = negative(%a)
    yield %n2
  }
  %f = fn (%y: tensor<2xf32>) {
    %a2 = nn.relu(%x)
    %s = add(%a2, %y)
    return %s
  }
  %q = call %f(%r)
  return %q
}"""
    before = parse(text)
    m = run_passes(text, "cse")
    out = print_module(m)
    assert "%b = " not in out and "%a2 = " not in out
    assert "%n = negative(%a)" in out and "%n2 = negative(%a)" in out   # siblings: both stay
    assert "%s = add(%a, %y)" in out
    x = np.array([-1, 2], np.float32)
    for c in (True, False):
        assert np.array_equal(run_function(m, "f", np.array(c), x), run_function(before, "f", np.array(c), x))
