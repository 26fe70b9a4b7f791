"""TE computes for relay operators (TOPI's role).

``STRATEGIES[op_name](e, op, args) -> tensor`` appends the te.compute(s)
for one relay op to the te.func body `e` emits into.  `args` are te tensor
Values, or :class:`Scalar` for a splat relay.constant (read as an
arith.constant in the body).

    elementwise and broadcasting ops                  topi_elemwise.py
    reductions (sum, max, argmax, variance, ...)      topi_reduce.py
    nn.dense         out[.., j] = sum_k x[.., k] * w[j, k]
    nn.bias_add      out = x + b[index along axis]
    nn.conv2d        a "pad" stage (guarded reads, zero outside) when padded,
                     then sum over (rc, ry, rx) of pad[n, g*I + rc, y*sh + ry*dh,
                     x*sw + rx*dw] * w[o, rc, ry, rx], any data/kernel/out
                     layout the relay op accepts, groups and dilation
    layout_transform out[dst index] = x[src index], blocked layouts by
                     floordiv / floormod of the primal index
"""

from __future__ import annotations

from ...dialects.te.builder import compute
from ...ir import types as T


class Scalar:
    """A splat constant operand: every element is `value`."""

    __slots__ = ("value", "type")

    def __init__(self, value, type):
        self.value = value
        self.type = type


STRATEGIES = {}


def strategy(*names):
    def reg(fn):
        for n in names:
            STRATEGIES[n] = fn
        return fn
    return reg


def load(e, arg, out_idx):
    """Read `arg` at the output index, numpy-broadcast: a size-1 dimension
    reads index 0 where the output's dimension is larger."""
    if isinstance(arg, Scalar):
        return e.const(arg.value, arg.type.element_type)
    shape = arg.type.shape
    out_shape = out_idx[0].block.parent_op.tensor_type.shape if out_idx else ()
    off = len(out_idx) - len(shape)
    return e.read(arg, [0 if n == 1 and out_shape[off + d] != 1 else out_idx[off + d]
                        for d, n in enumerate(shape)])


def out_type(op):
    t = op.results[0].type
    if not isinstance(t, T.TensorType) or not t.is_static:
        raise op.error(f"te lowering needs a static tensor type, got {t}")
    return t


def stage_name(op, default):
    n = op.results[0].name
    return n if n and not n[0].isdigit() else default


def axis_names(rank):
    return [f"ax{d}" for d in range(rank)]


# -- elementwise (the rest are in topi_elemwise.py) -----------------------------------

@strategy("nn.bias_add")
def bias_add(e, op, args):
    t = out_type(op)
    x, b = args
    axis = op.norm_axis(t.rank)

    def body(e, *idx):
        bv = e.const(b.value, t.element_type) if isinstance(b, Scalar) else e.read(b, [idx[axis]])
        return e.binary("add", load(e, x, idx), bv)
    return compute(e, t, body, names=axis_names(t.rank), name=stage_name(op, "T_bias_add"))


# -- reductions ---------------------------------------------------------------------------

def _tensor(e, arg, what):
    """`arg` as a tensor: a splat constant (fuse-ops clones one-element
    constants into kernels) becomes a stage that fills it, which the
    default schedule inlines."""
    if isinstance(arg, Scalar):
        et = arg.type.element_type
        return compute(e, arg.type, lambda e, *idx: e.const(arg.value, et),
                       names=axis_names(arg.type.rank), name=f"{what}_splat")
    return arg


@strategy("nn.dense")
def dense(e, op, args):
    t = out_type(op)
    x, w = _tensor(e, args[0], "data"), _tensor(e, args[1], "weight")
    k = x.type.shape[-1]
    ot = t.element_type

    def body(e, *idx):
        *i, j, r = idx
        a = e.cast(e.read(x, list(i) + [r]), ot)
        b = e.cast(e.read(w, [j, r]), ot)
        return e.binary("mul", a, b)
    names = (["i"] if t.rank == 2 else [f"i{d}" for d in range(t.rank - 1)]) + ["j"]
    return compute(e, t, body, reduce=[("k", k)], reducer="sum", names=names,
                   name=stage_name(op, "T_dense"))


@strategy("nn.conv2d")
def conv2d(e, op, args):
    t = out_type(op)
    x, w = _tensor(e, args[0], "data"), _tensor(e, args[1], "weight")
    a = op.attributes
    dl, kl, ol = op.layouts()
    ds, ks = dl.primal_shape(x.type.shape), kl.primal_shape(w.type.shape)
    sh, sw = a["strides"]
    dh, dw = a["dilation"]
    pt, pl, pb, pr = a["padding"]
    groups = a["groups"]
    cin, kh, kw = ks["I"], ks["H"], ks["W"]
    og = ks["O"] // groups
    ot = t.element_type
    if pt or pl or pb or pr:
        x = _pad(e, x, dl, ds, pt, pl, pb, pr)

    def body(e, *idx):
        o = {ax: idx[ol.index(ax)] for ax in "NCHW"}
        rc, ry, rx = idx[4:]
        ic = e.add(e.mul(e.floordiv(o["C"], og), cin), rc) if groups > 1 else rc
        pos = {"N": o["N"], "C": ic,
               "H": e.add(e.mul(o["H"], sh), e.mul(ry, dh)), "W": e.add(e.mul(o["W"], sw), e.mul(rx, dw))}
        kpos = {"O": o["C"], "I": rc, "H": ry, "W": rx}
        xv = e.cast(e.read(x, [pos[ax] for ax in dl.axes]), ot)
        wv = e.cast(e.read(w, [kpos[ax] for ax in kl.axes]), ot)
        return e.binary("mul", xv, wv)
    names = [ax.lower() for ax in ol.axes]
    return compute(e, t, body, reduce=[("rc", cin), ("ry", kh), ("rx", kw)], reducer="sum",
                   names=names, name=stage_name(op, "conv2d"))


def _pad(e, x, layout, sizes, pt, pl, pb, pr):
    """The zero-padded input: reads x only inside it (guarded read)."""
    h, w = sizes["H"], sizes["W"]
    shape = [{"H": h + pt + pb, "W": w + pl + pr}.get(ax, n) for ax, n in zip(layout.axes, x.type.shape)]
    t = T.TensorType(shape, x.type.element_type)
    hi, wi = layout.index("H"), layout.index("W")

    def body(e, *idx):
        y, xx = idx[hi], idx[wi]
        conds = []
        if pt:
            conds.append(e.cmp("ge", y, pt))
        if pb:
            conds.append(e.cmp("lt", y, h + pt))
        if pl:
            conds.append(e.cmp("ge", xx, pl))
        if pr:
            conds.append(e.cmp("lt", xx, w + pl))
        src = list(idx)
        src[hi], src[wi] = e.sub(y, pt), e.sub(xx, pl)
        return e.read(x, src, guard=e.all_of(conds), else_value=0.0)
    return compute(e, t, body, names=[ax.lower() for ax in layout.axes], name="pad")


# -- data movement ----------------------------------------------------------------------

@strategy("layout_transform")
def layout_transform(e, op, args):
    t = out_type(op)
    x = _tensor(e, args[0], "data")
    src, dst = op.layouts()

    def body(e, *idx):
        primal = {}
        for ax in dst.primal:
            v = idx[dst.index(ax)]
            f = dst.factors.get(ax.lower())
            primal[ax] = e.add(e.mul(v, f), idx[dst.index(ax.lower())]) if f else v
        sidx = []
        for ax in src.axes:
            if ax.isupper():
                f = src.factors.get(ax.lower())
                sidx.append(e.floordiv(primal[ax], f) if f else primal[ax])
            else:
                sidx.append(e.floormod(primal[ax.upper()], src.factors[ax]))
        return e.read(x, sidx)
    names = [ax.lower() if ax.isupper() else f"{ax}{dst.factors[ax]}" for ax in dst.axes]
    return compute(e, t, body, names=names,
                   name=stage_name(op, "T_layout_trans"))


# The rest of the operator set lives in topi_*.py; each registers with @strategy.
from . import (topi_elemwise, topi_image, topi_nn, topi_pool, topi_qnn, topi_reduce, topi_tensor,  # noqa: E402,F401
               topi_transform)  # noqa: E402,F401
