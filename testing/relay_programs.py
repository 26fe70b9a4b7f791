"""Random well-typed relay programs, for property tests of the passes.

    from tvmd.testing.relay_programs import relay_programs
    @given(relay_programs())
    def test_pass(prog):
        text, inputs = prog          # relay text of @main (+ helpers), numpy inputs for @main

The generator keeps a pool of typed values (parameters, constants, op
results, each 2-d or 4-d with its layout) and appends ops that are valid on
them: add / subtract / multiply / maximum (same shape, scalar, per-channel or
full constants), nn.relu, nn.bias_add, nn.dense, nn.conv2d (small shapes,
NCHW/OIHW or NHWC/HWIO, strides, padding), layout_transform, constants,
ops on constants only (for folding), repeats of an earlier op (for CSE), and
calls to helper functions defined after @main (for type inference).  Some
result types are written, some left for the parser to infer; some values are
left unused (for DCE).

Numbers are small integers stored as f32 and multiplications are by small
constants, so every intermediate is an exactly representable integer and
passes that reorder arithmetic still give bit-identical results.

hypothesis is imported inside the functions: importing this module costs
nothing where hypothesis is not installed.
"""

from __future__ import annotations

BINARY = ("add", "subtract", "multiply", "maximum")


class _Val:
    __slots__ = ("name", "shape", "layout", "const")

    def __init__(self, name, shape, layout=None, const=False):
        self.name = name
        self.shape = tuple(shape)
        self.layout = layout     # "NCHW" / "NHWC" for 4-d values, None otherwise
        self.const = const


def _ttype(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _literal(arr):
    if arr.ndim == 0:
        return repr(float(arr))
    return "[" + ", ".join(_literal(a) for a in arr) + "]"


class _Program:
    def __init__(self, draw, st, rng, max_ops, calls, extended=False):
        self.draw, self.st, self.rng = draw, st, rng
        self.max_ops, self.calls = max_ops, calls
        self.extended_ops = self.EXTENDED_OPS if extended else ()
        self.params = []      # (_Val, array)
        self.pool = []        # every value that can be an operand
        self.lines = []
        self.helpers = []     # text of helper functions, placed after @main
        self.emitted = []     # (text after '=', result shape, layout) for repeats
        self.n = 0

    def fresh(self, prefix):
        self.n += 1
        return f"%{prefix}{self.n}"

    def ints(self, shape, lo=-2, hi=2):
        import numpy as np
        return self.rng.integers(lo, hi + 1, size=shape).astype(np.float32)

    def param(self, shape, layout=None):
        v = _Val(self.fresh("x"), shape, layout)
        self.params.append((v, self.ints(shape)))
        self.pool.append(v)
        return v

    def constant(self, shape, layout=None, lo=-2, hi=2, add=True):
        arr = self.ints(shape, lo, hi)
        v = _Val(self.fresh("c"), shape, layout, const=True)
        self.lines.append(f"{v.name} = constant dense<{_literal(arr)}> : {_ttype(shape)}")
        if add:
            self.pool.append(v)
        return v

    def emit(self, body, shape, layout=None, typed=None):
        """`%r = body` with the result type written or left to inference."""
        if typed is None:
            typed = self.draw(self.st.booleans())
        v = _Val(self.fresh("t"), shape, layout)
        text = body + (f" : {_ttype(shape)}" if typed else "")
        self.lines.append(f"{v.name} = {text}")
        self.emitted.append((body, shape, layout))
        self.pool.append(v)
        return v

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        return cands[self.draw(self.st.integers(0, len(cands) - 1))]

    # -- ops ----------------------------------------------------------------------

    def op_relu(self):
        v = self.pick()
        self.emit(f"nn.relu({v.name})", v.shape, v.layout)

    def op_binary(self):
        a = self.pick()
        op = self.draw(self.st.sampled_from(BINARY))
        kinds = ["scalar", "full"]
        if any(v is not a and v.shape == a.shape and not v.const for v in self.pool):
            kinds.append("value")
        if a.layout is not None:
            kinds.append("channel")
        kind = self.draw(self.st.sampled_from(kinds))
        lo, hi = (-1, 2) if op == "multiply" else (-2, 2)
        if kind == "value" and op != "multiply":
            b = self.pick(lambda v: v is not a and v.shape == a.shape and not v.const)
        elif kind == "scalar" or kind == "value":
            b = self.constant((), lo=lo, hi=hi, add=False)
        elif kind == "full":
            b = self.constant(a.shape, a.layout, lo=lo, hi=hi, add=False)
        else:
            c = a.shape[a.layout.index("C")]
            shape = (c, 1, 1) if a.layout == "NCHW" else (c,)
            b = self.constant(shape, lo=lo, hi=hi, add=False)
        x, y = (a, b) if self.draw(self.st.booleans()) else (b, a)
        self.emit(f"{op}({x.name}, {y.name})", a.shape, a.layout)

    def op_bias_add(self):
        v = self.pick(lambda v: len(v.shape) in (2, 4))
        if v is None:
            return
        if v.layout is not None:
            axis = v.layout.index("C")
        else:
            axis = 1
        b = self.constant((v.shape[axis],), add=False)
        attrs = "" if axis == 1 else f" {{axis = {self.draw(self.st.sampled_from([axis, axis - len(v.shape)]))}}}"
        self.emit(f"nn.bias_add({v.name}, {b.name}){attrs}", v.shape, v.layout)

    def op_dense(self):
        v = self.pick(lambda v: len(v.shape) == 2)
        if v is None:
            return self.op_relu()
        m, k = v.shape
        units = self.draw(self.st.integers(1, 3))
        w = self._weight((units, k), None)
        self.emit(f"nn.dense({v.name}, {w.name})", (m, units))

    def _weight(self, shape, layout):
        if self.draw(self.st.booleans()):
            return self.constant(shape, layout, lo=-1, hi=1, add=False)
        v = _Val(self.fresh("w"), shape)
        self.params.append((v, self.ints(shape, -1, 1)))
        return v

    def op_conv2d(self):
        v = self.pick(lambda v: v.layout is not None)
        if v is None:
            return self.op_dense()
        lay = v.layout
        dims = dict(zip(lay, v.shape))
        n, c, h, w = dims["N"], dims["C"], dims["H"], dims["W"]
        o = self.draw(self.st.integers(1, 3))
        k = self.draw(self.st.sampled_from([1, 3]))
        pad = self.draw(self.st.integers(0, 1))
        stride = self.draw(self.st.integers(1, 2))
        if min(h, w) + 2 * pad < k:
            k = 1
        oh = (h + 2 * pad - k) // stride + 1
        ow = (w + 2 * pad - k) // stride + 1
        klay = "OIHW" if lay == "NCHW" else "HWIO"
        kdims = {"O": o, "I": c, "H": k, "W": k}
        wt = self._weight(tuple(kdims[a] for a in klay), None)
        attrs = []
        if stride != 1:
            attrs.append(f"strides = [{stride}, {stride}]")
        if pad:
            attrs.append("padding = [1, 1]")
        if lay == "NHWC":
            attrs.append('data_layout = "NHWC", kernel_layout = "HWIO"')
        a = f" {{{', '.join(attrs)}}}" if attrs else ""
        out = {"N": n, "C": o, "H": oh, "W": ow}
        self.emit(f"nn.conv2d({v.name}, {wt.name}){a}", tuple(out[x] for x in lay), lay)

    def op_layout_transform(self):
        v = self.pick(lambda v: v.layout is not None)
        if v is None:
            return self.op_relu()
        dst = "NHWC" if v.layout == "NCHW" else "NCHW"
        dims = dict(zip(v.layout, v.shape))
        self.emit(f'layout_transform({v.name}) {{src_layout = "{v.layout}", dst_layout = "{dst}"}}',
                  tuple(dims[x] for x in dst), dst)

    def op_constant(self):
        shape = self.draw(self.st.sampled_from([(), (2,), (2, 3)]))
        self.constant(shape)

    def op_const_subgraph(self):
        """An op on constants only: what --fold-constant folds."""
        a = self.constant(self.draw(self.st.sampled_from([(3,), (1, 2, 2, 2)])),
                          add=False, lo=-1, hi=1)
        lay = "NCHW" if len(a.shape) == 4 else None
        a.layout = lay
        self.pool.append(a)
        self.op_binary_on(a)

    def op_binary_on(self, a):
        op = self.draw(self.st.sampled_from(BINARY))
        b = self.constant(a.shape, a.layout, lo=-1, hi=1, add=False)
        self.emit(f"{op}({a.name}, {b.name})", a.shape, a.layout)

    def op_repeat(self):
        if not self.emitted:
            return self.op_relu()
        body, shape, layout = self.emitted[self.draw(self.st.integers(0, len(self.emitted) - 1))]
        # a call's type is always written: interpreting needs it before --infer-type
        self.emit(body, shape, layout, typed=True if body.startswith("call") else None)

    def op_call(self):
        v = self.pick(lambda v: not v.const)
        name = f"@helper{len(self.helpers)}"
        t = _ttype(v.shape)
        self.helpers.append(
            f"relay.func {name}(%a: {t}) {{\n"
            f"  %one = constant dense<1.0> : tensor<f32>\n"
            f"  %r = nn.relu(%a)\n"
            f"  %s = add(%r, %one)\n"
            f"  return %s\n}}\n")
        self.emit(f"call {name}({v.name})", v.shape, v.layout, typed=True)

    OPS = ("relu", "binary", "binary", "bias_add", "dense", "conv2d", "conv2d", "layout_transform",
           "constant", "const_subgraph", "repeat", "call")

    # -- extended=True: the graph passes' ops (additive; the default set above
    # keeps every intermediate an exact small integer) ---------------------------------

    EXTENDED_OPS = ("batch_norm", "batch_norm", "layer_norm", "mean", "max_pool", "softmax", "dropout",
                    "transpose2d", "channel_scale", "channel_scale", "reshape_pair")

    def op_batch_norm(self):
        v = self.pick(lambda v: v.layout is not None or len(v.shape) == 2)
        if v is None:
            return self.op_relu()
        axis = v.layout.index("C") if v.layout else 1
        c = v.shape[axis]
        g, b, m = (self.constant((c,), add=False) for _ in range(3))
        var = _Val(self.fresh("c"), (c,), const=True)
        vals = [self.draw(self.st.sampled_from([0.25, 1.0, 4.0])) for _ in range(c)]
        self.lines.append(f"{var.name} = constant dense<[{', '.join(map(repr, vals))}]> : {_ttype((c,))}")
        attrs = "" if axis == 1 else f" {{axis = {axis}}}"
        bn = self.fresh("bn")
        self.lines.append(f"{bn} = nn.batch_norm({v.name}, {g.name}, {b.name}, {m.name}, {var.name}){attrs}")
        self.emit(f"get_item({bn}) {{index = 0}}", v.shape, v.layout)

    def op_layer_norm(self):
        v = self.pick(lambda v: not v.const and v.shape and v.shape[-1] > 1)
        if v is None:
            return self.op_relu()
        g = self.constant((v.shape[-1],), add=False)
        b = self.constant((v.shape[-1],), add=False)
        self.emit(f"nn.layer_norm({v.name}, {g.name}, {b.name})", v.shape, v.layout)

    def op_mean(self):
        v = self.pick(lambda v: not v.const and v.shape)   # a rank-0 value has no axis to reduce
        if v is None:
            return self.op_relu()
        axis = len(v.shape) - 1
        shape = v.shape[:-1] + (1,)
        self.emit(f"mean({v.name}) {{axis = [{axis}], keepdims = true}}", shape, v.layout)

    def op_max_pool(self):
        v = self.pick(lambda v: v.layout is not None)
        if v is None:
            return self.op_relu()
        dims = dict(zip(v.layout, v.shape))
        out = dict(dims, H=dims["H"] + 1, W=dims["W"] + 1)   # pool 2x2, stride 1, padding 1
        lay = '' if v.layout == "NCHW" else ', layout = "NHWC"'
        self.emit(f"nn.max_pool2d({v.name}) {{pool_size = [2, 2], padding = [1, 1]{lay}}}",
                  tuple(out[a] for a in v.layout), v.layout)

    def op_softmax(self):
        v = self.pick(lambda v: not v.const and v.shape)   # softmax needs an axis
        if v is None:
            return self.op_relu()
        self.emit(f"nn.softmax({v.name})", v.shape, v.layout)

    def op_dropout(self):
        v = self.pick(lambda v: not v.const)
        d = self.fresh("drop")
        self.lines.append(f"{d} = nn.dropout({v.name})")
        self.emit(f"get_item({d}) {{index = 0}}", v.shape, v.layout)

    def op_transpose2d(self):
        v = self.pick(lambda v: len(v.shape) == 2 and not v.const)
        if v is None:
            return self.op_relu()
        self.emit(f"transpose({v.name}) {{axes = [1, 0]}}", v.shape[::-1])

    def op_channel_scale(self):
        """A per-channel multiply by powers of two, what fold-scale-axis folds."""
        v = self.pick(lambda v: v.layout is not None and not v.const)
        if v is None:
            return self.op_relu()
        c = v.shape[v.layout.index("C")]
        vals = [self.draw(self.st.sampled_from([0.5, 2.0, 4.0])) for _ in range(c)]
        k = _Val(self.fresh("c"), (c, 1, 1) if v.layout == "NCHW" else (c,), const=True)
        body = ", ".join(f"[[{x!r}]]" for x in vals) if v.layout == "NCHW" else ", ".join(map(repr, vals))
        self.lines.append(f"{k.name} = constant dense<[{body}]> : {_ttype(k.shape)}")
        self.emit(f"multiply({v.name}, {k.name})", v.shape, v.layout)

    def op_reshape_pair(self):
        """reshape to 1-d and back: what --canonicalize merges and removes."""
        v = self.pick(lambda v: not v.const)
        n = 1
        for d in v.shape:
            n *= d
        flat = self.emit(f"reshape({v.name}) {{newshape = [{n}]}}", (n,))
        self.emit(f"reshape({flat.name}) {{newshape = [{', '.join(map(str, v.shape))}]}}", v.shape, v.layout)

    def build(self):
        st = self.st
        first = self.draw(st.sampled_from(["4d", "2d", "both"]))
        if first in ("4d", "both"):
            lay = self.draw(st.sampled_from(["NCHW", "NCHW", "NHWC"]))
            n, c = 1, self.draw(st.integers(1, 3))
            h, w = self.draw(st.integers(2, 5)), self.draw(st.integers(2, 5))
            d = {"N": n, "C": c, "H": h, "W": w}
            self.param(tuple(d[x] for x in lay), lay)
        if first in ("2d", "both"):
            self.param((self.draw(st.integers(1, 3)), self.draw(st.integers(1, 4))))
        ops = [o for o in self.OPS if self.calls or o != "call"] + list(self.extended_ops)
        for _ in range(self.draw(st.integers(1, self.max_ops))):
            getattr(self, "op_" + self.draw(st.sampled_from(ops)))()
        results = [v for v in self.pool if not v.const]
        ret = results[-1] if self.draw(st.integers(0, 3)) else results[self.draw(st.integers(0, len(results) - 1))]
        params = ", ".join(f"{v.name}: {_ttype(v.shape)}" for v, _ in self.params)
        body = "".join(f"  {line}\n" for line in self.lines)
        text = f"relay.func @main({params}) {{\n{body}  return {ret.name}\n}}\n"
        text += "".join("\n" + h for h in self.helpers)
        return text, [a for _, a in self.params]


def relay_programs(max_ops: int = 8, calls: bool = True, extended: bool = False):
    """A hypothesis strategy of ``(text, inputs)``: a relay module whose
    ``@main`` takes the numpy arrays `inputs`.  ``extended=True`` adds the
    ops of the graph passes (batch_norm, layer_norm, mean, max_pool2d,
    softmax, dropout, transpose, per-channel scales, reshapes), whose values
    are no longer exact integers: compare those with a tolerance."""
    import numpy as np
    from hypothesis import strategies as st

    @st.composite
    def programs(draw):
        seed = draw(st.integers(0, 2 ** 32 - 1))
        return _Program(draw, st, np.random.default_rng(seed), max_ops, calls, extended).build()

    return programs()
