"""Random relay programs with if, match, tuples, closures and ADT values,
for the language's property tests (tests/test_relay_lang_*.py).

    @given(programs())
    def test(prog):
        text, args = prog        # relay text of @main, and its inputs

The generator keeps a scope of typed values and appends ops valid on them;
an ``if``, a ``match`` arm or a ``fn`` opens a nested scope (its values
vanish at its end, as in the text).  Result types are written or left to
the parser at random.  Values are small integers stored as f32, so every
result is exact and "the same" means bit-identical.
"""

import numpy as np
from hypothesis import strategies as st

TEN = "tensor<3xf32>"
BOOL = "tensor<i1>"
FN = f"({TEN}) -> {TEN}"
TUP = f"tuple<{TEN}, {TEN}>"
OPT = f"!relay.adt<@Opt<{TEN}>>"
PRELUDE = "relay.adt @Opt<A> {\n  Some(!A),\n  None\n}\n\n"


class Gen:
    def __init__(self, draw):
        self.draw = draw
        self.n = 0
        self.lines = []

    def fresh(self, p="v"):
        self.n += 1
        return f"%{p}{self.n}"

    def pick(self, scope, kind):
        vals = [v for v, k in scope if k == kind]
        return self.draw(st.sampled_from(vals)) if vals else None

    def ty(self, t):
        """A result type, written or left to the parser."""
        return f" : {t}" if self.draw(st.booleans()) else ""

    def emit(self, indent, text):
        self.lines.append("  " * indent + text)

    def block(self, scope, indent, depth, n_ops):
        """Emit ops into the current block; returns a tensor value to yield/return."""
        scope = list(scope)
        for _ in range(n_ops):
            choices = ["binary", "unary", "const", "tuple", "opt"]
            if depth < 2:
                choices += ["if", "fn", "match"]
            if self.pick(scope, "fn"):
                choices.append("call")
            if self.pick(scope, "tup"):
                choices.append("get")
            kind = self.draw(st.sampled_from(choices))
            r = self.fresh()
            if kind == "binary":
                op = self.draw(st.sampled_from(["add", "subtract", "multiply", "maximum"]))
                a, b = self.pick(scope, "t"), self.pick(scope, "t")
                self.emit(indent, f"{r} = {op}({a}, {b}){self.ty(TEN)}")
                scope.append((r, "t"))
            elif kind == "unary":
                op = self.draw(st.sampled_from(["nn.relu", "negative"]))
                self.emit(indent, f"{r} = {op}({self.pick(scope, 't')}){self.ty(TEN)}")
                scope.append((r, "t"))
            elif kind == "const":
                vals = self.draw(st.lists(st.integers(-2, 2), min_size=3, max_size=3))
                lit = ", ".join(f"{v}.0" for v in vals)
                self.emit(indent, f"{r} = constant dense<[{lit}]> : {TEN}")
                scope.append((r, "t"))
            elif kind == "tuple":
                a, b = self.pick(scope, "t"), self.pick(scope, "t")
                self.emit(indent, f"{r} = tuple({a}, {b}){self.ty(TUP)}")
                scope.append((r, "tup"))
            elif kind == "get":
                i = self.draw(st.integers(0, 1))
                self.emit(indent, f"{r} = get_item({self.pick(scope, 'tup')}) {{index = {i}}}{self.ty(TEN)}")
                scope.append((r, "t"))
            elif kind == "opt":
                if self.draw(st.booleans()):
                    self.emit(indent, f"{r} = Some({self.pick(scope, 't')}){self.ty(OPT)}")
                else:
                    self.emit(indent, f"{r} = None : {OPT}")
                scope.append((r, "opt"))
            elif kind == "if":
                c = self.pick(scope, "b")
                self.emit(indent, f"{r} = if {c}{self.ty(TEN)} {{")
                y = self.block(scope, indent + 1, depth + 1, self.draw(st.integers(0, 3)))
                self.emit(indent + 1, f"yield {y}")
                self.emit(indent, "} else {")
                y = self.block(scope, indent + 1, depth + 1, self.draw(st.integers(0, 3)))
                self.emit(indent + 1, f"yield {y}")
                self.emit(indent, "}")
                scope.append((r, "t"))
            elif kind == "match":
                o = self.pick(scope, "opt")
                if o is None:
                    self.emit(indent, f"{r} = None : {OPT}")
                    scope.append((r, "opt"))
                    continue
                self.emit(indent, f"{r} = match {o}{self.ty(TEN)} {{")
                h = self.fresh("h")
                self.emit(indent + 1, f"Some({h}) => {{")
                y = self.block(scope + [(h, "t")], indent + 2, depth + 1, self.draw(st.integers(0, 2)))
                self.emit(indent + 2, f"yield {y}")
                self.emit(indent + 1, "}")
                self.emit(indent + 1, "None => {")
                y = self.block(scope, indent + 2, depth + 1, self.draw(st.integers(0, 2)))
                self.emit(indent + 2, f"yield {y}")
                self.emit(indent + 1, "}")
                self.emit(indent, "}")
                scope.append((r, "t"))
            elif kind == "fn":
                p = self.fresh("p")
                ret = f" -> {TEN}" if self.draw(st.booleans()) else ""
                self.emit(indent, f"{r} = fn ({p}: {TEN}){ret} {{")
                y = self.block(scope + [(p, "t")], indent + 1, depth + 1, self.draw(st.integers(0, 3)))
                self.emit(indent + 1, f"return {y}")
                self.emit(indent, "}")
                scope.append((r, "fn"))
            elif kind == "call":
                f, a = self.pick(scope, "fn"), self.pick(scope, "t")
                self.emit(indent, f"{r} = call {f}({a}){self.ty(TEN)}")
                scope.append((r, "t"))
        # mostly the last tensor, so that most ops matter; sometimes any (dead code for dce)
        tensors = [v for v, k in scope if k == "t"]
        return tensors[-1] if self.draw(st.integers(0, 3)) else self.pick(scope, "t")


@st.composite
def programs(draw):
    g = Gen(draw)
    scope = [("%x", "t"), ("%y", "t"), ("%c", "b"), ("%d", "b")]
    g.lines.append(f"relay.func @main(%x: {TEN}, %y: {TEN}, %c: {BOOL}, %d: {BOOL}) {{")
    r = g.block(scope, 1, 0, draw(st.integers(1, 8)))
    g.emit(1, f"return {r}")
    g.lines.append("}")
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    args = [rng.integers(-3, 4, 3).astype(np.float32), rng.integers(-3, 4, 3).astype(np.float32),
            np.array(draw(st.booleans())), np.array(draw(st.booleans()))]
    return PRELUDE + "\n".join(g.lines) + "\n", args
