"""Recurrent layers: LSTM, GRU, RNN, each direction one relay ``loop``
over the static sequence length (TVM's frontend unrolled them).

Per direction the input projection of every time step is one nn.dense over
the flattened sequence, before the loop; each step of the loop then takes
its row of the projection (``take(%proj, %t)``, t = the step index, or
seq - 1 - it in reverse), adds the recurrent projection (nn.dense against
R), splits the gates and applies the activations.  The loop carries the
states (h, and c for LSTM) and stacks h per step; Y is that stack in time
order (a reverse direction's is reversed; num_directions on axis 1), Y_h
and Y_c are the final states.  ``layout = 1`` (batch first) is transposed
in and out.  With ``sequence_lens``, a step past a sequence's length leaves
its states as they are and outputs 0, so the final states are those of its
last step and a reverse direction starts there.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter
from .shape import strided_slice

# activations that read alpha / beta, with ONNX's defaults
_ALPHA_BETA = {"LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None), "Elu": (1.0, None),
               "Affine": (1.0, 0.0), "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5)}


def _activation(cx, name, x, alpha, beta):
    s = lambda v: cx.scalar(v, x)   # noqa: E731
    if name == "Sigmoid":
        return cx.op("sigmoid", x)
    if name == "Tanh":
        return cx.op("tanh", x)
    if name == "Relu":
        return cx.op("nn.relu", x)
    if name == "LeakyRelu":
        return cx.op("nn.leaky_relu", x, alpha=alpha)
    if name == "ThresholdedRelu":
        return cx.op("where", cx.op("greater", x, s(alpha)), x, s(0))
    if name == "Elu":
        neg = cx.op("multiply", cx.op("subtract", cx.op("exp", x), s(1)), s(alpha))
        return cx.op("where", cx.op("less", x, s(0)), neg, x)
    if name == "Affine":
        return cx.op("add", cx.op("multiply", x, s(alpha)), s(beta))
    if name == "ScaledTanh":
        return cx.op("multiply", cx.op("tanh", cx.op("multiply", x, s(beta))), s(alpha))
    if name == "HardSigmoid":
        return cx.op("clip", cx.op("add", cx.op("multiply", x, s(alpha)), s(beta)), a_min=0.0, a_max=1.0)
    if name == "Softsign":
        return cx.op("divide", x, cx.op("add", cx.op("abs", x), s(1)))
    if name == "Softplus":
        return cx.op("log", cx.op("add", cx.op("exp", x), s(1)))
    raise cx.unsupported(f"activation '{name}'")


def _activations(cx, node, defaults, ndir):
    """One list of (name, alpha, beta) per direction."""
    names = list(node.attr("activations") or defaults * ndir)
    if len(names) == len(defaults) and ndir == 2:
        names = names * 2
    if len(names) != len(defaults) * ndir:
        raise cx.error(f"activations must name {len(defaults)} function(s) per direction "
                       f"({len(defaults) * ndir} in all), got {len(names)}")
    alphas = list(node.attr("activation_alpha", ()))
    betas = list(node.attr("activation_beta", ()))
    out = []
    for name in names:
        da, db = _ALPHA_BETA.get(name, (None, None))
        a = alphas.pop(0) if da is not None and alphas else da
        b = betas.pop(0) if db is not None and betas else db
        out.append((name, a, b))
    n = len(defaults)
    return [out[i * n:(i + 1) * n] for i in range(ndir)]


class _Layer:
    """What the three layers share: shapes, per-direction weights, inputs."""

    def __init__(self, cx, node, gates):
        self.cx, self.node, self.gates = cx, node, gates
        x = node.input(0)
        self.layout = node.attr("layout", 0)
        if cx.rank(x) != 3:
            raise cx.error(f"input X must be 3-d ({'batch, seq' if self.layout else 'seq, batch'}, input_size), "
                           f"got {cx.ttype(x)}")
        if self.layout:
            x = cx.op("transpose", x, axes=(1, 0, 2))
        self.x = x
        self.seq, self.batch, self.input_size = cx.static_shape(x, "input X")
        if self.seq == 0:
            raise cx.unsupported("an empty sequence (0 steps)")
        direction = node.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise cx.error(f"unknown direction '{direction}'")
        self.dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
        ndir = len(self.dirs)
        r_shape = cx.static_shape(node.input(2), "R")
        hidden = node.attr("hidden_size")
        if hidden is None and len(r_shape) == 3:
            hidden = r_shape[-1]
        if hidden is None or hidden <= 0:
            raise cx.error(f"hidden_size must be positive, got {hidden}")
        self.hidden = hidden
        gh = gates * hidden
        self._expect(1, "W", (ndir, gh, self.input_size))
        self._expect(2, "R", (ndir, gh, hidden))
        self._expect(3, "B", (ndir, 2 * gh))
        state = (self.batch, ndir, hidden) if self.layout else (ndir, self.batch, hidden)
        self._expect(5, "initial_h", state)
        if gates == 4:
            self._expect(6, "initial_c", state)
            self._expect(7, "P", (ndir, 3 * hidden))
        self.clip = node.attr("clip")
        lens = node.input(4)
        if lens is not None:
            lv = cx.static(lens)
            if lv is not None and (lv == self.seq).all():
                lens = None       # every sequence whole: nothing to mask
            elif cx.shape(lens) != (self.batch,):
                raise cx.error(f"sequence_lens must have shape [{self.batch}], got {cx.ttype(lens)}")
            else:
                lens = cx.cast(lens, T.i64)
        self.lens = lens

    def _expect(self, i, what, shape):
        """Input i, when given, has `shape` (it determines every step's ops)."""
        v = self.node.input(i)
        if v is not None and self.cx.shape(v) != shape:
            raise self.cx.error(f"{what} must have shape {list(shape)} (from X {list(self.cx.shape(self.x))}, "
                                f"hidden_size {self.hidden}, {len(self.dirs)} direction(s)), got {self.cx.ttype(v)}")

    def part(self, v, d):
        """Direction d of a (num_directions, ...) tensor."""
        cx = self.cx
        return cx.op("take", v, cx.const(d, "int64"), axis=0)

    def initial(self, idx, d):
        v = self.node.input(idx)
        if v is None:
            import numpy as np
            self.cx.check_size((self.batch, self.hidden), self.cx.dtype(self.x), "the initial state")
            return self.cx.const(np.zeros((self.batch, self.hidden), dtype=self.cx.ttype(self.x).dtype))
        if self.layout:
            v = self.cx.op("transpose", v, axes=(1, 0, 2))
        return self.part(v, d)

    def input_projections(self, d, bias):
        """X_t W^T (+ bias) for every t: (seq, batch, gates * hidden)."""
        cx = self.cx
        w = self.part(self.node.input(1), d)
        flat = cx.op("reshape", self.x, newshape=(self.seq * self.batch, self.input_size))
        proj = cx.op("nn.dense", flat, w)
        if bias is not None:
            proj = cx.op("add", proj, bias)
        return cx.op("reshape", proj, newshape=(self.seq, self.batch, self.gates * self.hidden))

    def recur(self, d, proj, inits, step):
        """Direction d as one relay loop over the sequence: `step(x_t,
        states)` builds one step's ops in the loop body and returns the next
        states, h first.  Returns (the h of every step in time order,
        (seq, batch, hidden); the final states)."""
        from .control import counted_loop
        cx = self.cx
        reverse = self.dirs[d] == "reverse"

        def body(t, states):
            if reverse:
                t = cx.op("subtract", cx.const(self.seq - 1, "int64"), t)
            new = step(cx.op("take", proj, t, axis=0), states)
            if self.lens is None:
                return new, [new[0]]
            # past a sequence's length: the states stay, the output is 0 (so a
            # reverse direction starts at each sequence's own last step)
            live = cx.op("expand_dims", cx.op("less", t, self.lens), axis=1)
            new = [cx.op("where", live, n, s) for n, s in zip(new, states)]
            return new, [cx.op("where", live, new[0], cx.op("zeros_like", new[0]))]
        finals, (hs,) = counted_loop(cx, self.seq, inits, body, ["t"] + ["h", "c"][:len(inits)])
        if reverse:
            hs = cx.op("reverse", hs, axis=0)
        return hs, finals

    def biases(self, d):
        """(W bias, R bias) of direction d, each (gates * hidden), or Nones."""
        cx = self.cx
        b = self.node.input(3)
        if b is None:
            return None, None
        b = self.part(b, d)
        if cx.shape(b) != (2 * self.gates * self.hidden,):
            raise cx.error(f"B must hold {2 * self.gates} x hidden_size values per direction, got {cx.ttype(b)}")
        halves = cx.op("split", b, indices_or_sections=2, axis=0)
        return cx.get_item(halves, 0), cx.get_item(halves, 1)

    def gate_parts(self, v):
        cx = self.cx
        parts = cx.op("split", v, indices_or_sections=self.gates, axis=1)
        return [cx.get_item(parts, i) for i in range(self.gates)]

    def clipped(self, v):
        if self.clip is None:
            return v
        return self.cx.op("clip", v, a_min=-float(self.clip), a_max=float(self.clip))

    def outputs(self, ys, finals):
        """Y (seq, dirs, batch, hidden) from each direction's (seq, batch,
        hidden), and the final states (dirs, batch, hidden) from each
        direction's (batch, hidden)."""
        cx = self.cx
        y = cx.op("stack", *ys, axis=1) if len(ys) > 1 else cx.op("expand_dims", ys[0], axis=1)
        outs = [y]
        for states in finals:
            s = cx.op("stack", *states, axis=0) if len(states) > 1 else cx.op("expand_dims", states[0], axis=0)
            outs.append(s)
        if self.layout:
            outs = [cx.op("transpose", outs[0], axes=(2, 0, 1, 3))] + \
                   [cx.op("transpose", s, axes=(1, 0, 2)) for s in outs[1:]]
        return outs


@converter("LSTM", 7)
def lstm(cx, node):
    """Gates i, o, f, c (ONNX's order); optional peepholes P (i, o, f)."""
    layer = _Layer(cx, node, 4)
    if node.attr("input_forget", 0):
        raise cx.unsupported("input_forget = 1")
    acts = _activations(cx, node, ["Sigmoid", "Tanh", "Tanh"], len(layer.dirs))
    ys, hs_final, cs_final = [], [], []
    for d in range(len(layer.dirs)):
        (f, fa, fb), (g, ga, gb), (h, ha, hb) = acts[d]
        wb, rb = layer.biases(d)
        bias = cx.op("add", wb, rb) if wb is not None else None
        xs = layer.input_projections(d, bias)
        r = layer.part(node.input(2), d)
        peep = None
        if node.input(7) is not None:
            pp = cx.op("split", layer.part(node.input(7), d), indices_or_sections=3, axis=0)
            peep = [cx.get_item(pp, i) for i in range(3)]
        def step(x_t, states, f=f, fa=fa, fb=fb, g=g, ga=ga, gb=gb, h=h, ha=ha, hb=hb, r=r, peep=peep):
            hcur, ccur = states
            gates = cx.op("add", x_t, cx.op("nn.dense", hcur, r))
            i, o, fg, c = layer.gate_parts(gates)
            if peep is not None:
                i = cx.op("add", i, cx.op("multiply", peep[0], ccur))
                fg = cx.op("add", fg, cx.op("multiply", peep[2], ccur))
            i = _activation(cx, f, layer.clipped(i), fa, fb)
            fg = _activation(cx, f, layer.clipped(fg), fa, fb)
            c = _activation(cx, g, layer.clipped(c), ga, gb)
            ccur = cx.op("add", cx.op("multiply", fg, ccur), cx.op("multiply", i, c))
            if peep is not None:
                o = cx.op("add", o, cx.op("multiply", peep[1], ccur))
            o = _activation(cx, f, layer.clipped(o), fa, fb)
            return [cx.op("multiply", o, _activation(cx, h, ccur, ha, hb)), ccur]
        hs, (hcur, ccur) = layer.recur(d, xs, [layer.initial(5, d), layer.initial(6, d)], step)
        ys.append(hs)
        hs_final.append(hcur)
        cs_final.append(ccur)
    return layer.outputs(ys, [hs_final, cs_final])


@converter("GRU", 7)
def gru(cx, node):
    """Gates z, r, h; linear_before_reset applies r after the recurrent
    projection of h (and its bias)."""
    layer = _Layer(cx, node, 3)
    lbr = node.attr("linear_before_reset", 0)
    acts = _activations(cx, node, ["Sigmoid", "Tanh"], len(layer.dirs))
    hdim = layer.hidden
    ys, finals = [], []
    for d in range(len(layer.dirs)):
        (f, fa, fb), (g, ga, gb) = acts[d]
        wb, rb = layer.biases(d)
        xs = layer.input_projections(d, wb)
        r = layer.part(node.input(2), d)
        rparts = cx.op("split", r, indices_or_sections=3, axis=0)
        r_zr = cx.op("concatenate", cx.get_item(rparts, 0), cx.get_item(rparts, 1), axis=0)
        r_h = cx.get_item(rparts, 2)
        if rb is not None:
            rbp = cx.op("split", rb, indices_or_sections=3, axis=0)
            rb_zr = cx.op("concatenate", cx.get_item(rbp, 0), cx.get_item(rbp, 1), axis=0)
            rb_h = cx.get_item(rbp, 2)
        def step(x_t, states, f=f, fa=fa, fb=fb, g=g, ga=ga, gb=gb, r_zr=r_zr, r_h=r_h, rb=rb):
            (hcur,) = states
            xz_r = strided_slice(cx, x_t, [0], [2 * hdim], [1], [1])
            xh = strided_slice(cx, x_t, [2 * hdim], [3 * hdim], [1], [1])
            zr = cx.op("add", xz_r, cx.op("nn.dense", hcur, r_zr))
            if rb is not None:
                zr = cx.op("add", zr, rb_zr)
            zr = _activation(cx, f, layer.clipped(zr), fa, fb)
            parts = cx.op("split", zr, indices_or_sections=2, axis=1)
            z, rg = cx.get_item(parts, 0), cx.get_item(parts, 1)
            if lbr:
                hr = cx.op("nn.dense", hcur, r_h)
                if rb is not None:
                    hr = cx.op("add", hr, rb_h)
                pre = cx.op("add", xh, cx.op("multiply", rg, hr))
            else:
                pre = cx.op("add", xh, cx.op("nn.dense", cx.op("multiply", rg, hcur), r_h))
                if rb is not None:
                    pre = cx.op("add", pre, rb_h)
            hh = _activation(cx, g, layer.clipped(pre), ga, gb)
            one_minus_z = cx.op("subtract", cx.scalar(1, z), z)
            return [cx.op("add", cx.op("multiply", one_minus_z, hh), cx.op("multiply", z, hcur))]
        hs, (hcur,) = layer.recur(d, xs, [layer.initial(5, d)], step)
        ys.append(hs)
        finals.append(hcur)
    return layer.outputs(ys, [finals])


@converter("RNN", 7)
def rnn(cx, node):
    layer = _Layer(cx, node, 1)
    acts = _activations(cx, node, ["Tanh"], len(layer.dirs))
    ys, finals = [], []
    for d in range(len(layer.dirs)):
        ((f, fa, fb),) = acts[d]
        wb, rb = layer.biases(d)
        bias = cx.op("add", wb, rb) if wb is not None else None
        xs = layer.input_projections(d, bias)
        r = layer.part(node.input(2), d)
        def step(x_t, states, f=f, fa=fa, fb=fb, r=r):
            pre = cx.op("add", x_t, cx.op("nn.dense", states[0], r))
            return [_activation(cx, f, layer.clipped(pre), fa, fb)]
        hs, (hcur,) = layer.recur(d, xs, [layer.initial(5, d)], step)
        ys.append(hs)
        finals.append(hcur)
    return layer.outputs(ys, [finals])
