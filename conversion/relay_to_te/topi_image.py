"""TE computes for relay's resizes: image.resize1d/2d/3d, nn.upsampling,
nn.upsampling3d.

Each output element reads its taps directly (no intermediate stage): along
spatial axis j (input size L, output size M, scale M / L unless the op's
``scales`` says otherwise) the source coordinate of output index i is
computed in f64, in the reference's own operation order so that nearest
rounding sees the same double:

    half_pixel            (i + 0.5) / scale - 0.5
    half_pixel_symmetric  L / 2 * (1 - M / (scale * L)) + (i + 0.5) / scale - 0.5
    pytorch_half_pixel    half_pixel when M > 1, else 0
    align_corners         i * (L - 1) / (M - 1) (0 when M = 1); with given scales
                          i * (L - 1) / (scale * L - 1), as ONNX's reference
    asymmetric            i / scale
    tf_half_pixel_for_nn  (i + 0.5) / scale
    tf_crop_and_resize    roi_start * (L - 1) + i * (roi_end - roi_start) * (L - 1) / (M - 1)

then the taps and weights of the method (every tap clamped to [0, L - 1]):

    nearest_neighbor  one tap, the rounded coordinate (rounding_method; "" is
                      round for align_corners, floor otherwise)
    linear            floor(x) and floor(x) + 1, weights 1 - t and t (t = x - floor(x))
    cubic             floor(x) - 1 .. floor(x) + 2, Keys' weights with cubic_alpha;
                      cubic_exclude zeroes the taps outside the input and renormalises

The axes are resampled as the reference does them, axis 0 first and each
axis' taps summed left to right in f64 (so integer outputs, which round to
nearest even, see the same doubles at .5); tf_crop_and_resize gives
extrapolation_value where a coordinate falls outside [0, L - 1].
"""

from __future__ import annotations

from ...dialects.te.builder import compute
from ...ir import types as T
from .registry import (as_tensor, fconst, layout_names, out_type, primal_index, read_primal, stage_name, strategy,
                       to_float, to_index)

F = T.f64


def _coord(e, i, mode, L, M, scale, roi, span):
    """The source coordinate (f64 Value) of output index `i`; `span` is
    align_corners' divisor (M - 1, or scale * L - 1 for a given scale)."""
    c = lambda v: fconst(e, v, F)  # noqa: E731
    fi = to_float(e, i, F)

    def half(e):
        return e.binary("div", e.binary("add", fi, c(0.5)), c(scale))
    if mode == "half_pixel":
        return e.binary("sub", half(e), c(0.5))
    if mode == "half_pixel_symmetric":
        adjustment = M / (scale * L)
        return e.binary("sub", e.binary("add", c(L / 2 * (1 - adjustment)), half(e)), c(0.5))
    if mode == "pytorch_half_pixel":
        return e.binary("sub", half(e), c(0.5)) if M > 1 else c(0.0)
    if mode == "align_corners":
        return e.binary("div", e.binary("mul", fi, c(L - 1)), c(span)) if M > 1 and span > 0 else c(0.0)
    if mode == "asymmetric":
        return e.binary("div", fi, c(scale))
    if mode == "tf_half_pixel_for_nn":
        return half(e)
    start, end = roi   # tf_crop_and_resize
    if M > 1:
        span = e.binary("mul", e.binary("mul", fi, c(end - start)), c(L - 1))
        return e.binary("add", c(start * (L - 1)), e.binary("div", span, c(M - 1)))
    return c(0.5 * (start + end) * (L - 1))


def _round(e, x, how):
    if how == "round_prefer_floor":
        return e.intrin("ceil", e.binary("sub", x, fconst(e, 0.5, F)))
    if how == "round_prefer_ceil":
        return e.intrin("floor", e.binary("add", x, fconst(e, 0.5, F)))
    if how in ("floor", "ceil"):
        return e.intrin(how, x)
    return e.intrin("round", x)   # half to even, as the reference's np.round


def _clamp(e, p, L):
    return e.index("min", e.index("max", p, 0), L - 1)


def _cubic(e, d, alpha, far):
    """Keys' kernel at distance d (>= 0), on the branch for d <= 1 or 1 < d < 2."""
    c = lambda v: fconst(e, v, F)  # noqa: E731
    mul, add, sub = (lambda a, b, k=k: e.binary(k, a, b) for k in ("mul", "add", "sub"))
    if not far:
        inner = sub(mul(c(alpha + 2), d), c(alpha + 3))
        return add(mul(mul(inner, d), d), c(1.0))
    inner = add(mul(sub(mul(c(alpha), d), c(5 * alpha)), d), c(8 * alpha))
    return sub(mul(inner, d), c(4 * alpha))


def _taps(e, x, L, method, rounding, mode, alpha, exclude):
    """[(index, weight f64 Value or None)] of one axis."""
    if method == "nearest_neighbor":
        how = rounding or ("round" if mode == "align_corners" else "floor")
        return [(_clamp(e, to_index(e, _round(e, x, how)), L), None)]
    fl = e.intrin("floor", x)
    t = e.binary("sub", x, fl)
    x0 = to_index(e, fl)
    one = fconst(e, 1.0, F)
    if method == "linear":
        offs, ws = [0, 1], [e.binary("sub", one, t), t]
    else:
        offs = [-1, 0, 1, 2]
        ws = [_cubic(e, e.binary("add", one, t), alpha, True), _cubic(e, t, alpha, False),
              _cubic(e, e.binary("sub", one, t), alpha, False),
              _cubic(e, e.binary("sub", fconst(e, 2.0, F), t), alpha, True)]
    pos = [e.add(x0, o) for o in offs]
    if method == "cubic" and exclude:
        zero = fconst(e, 0.0, F)
        ws = [e.select(e.all_of([e.cmp("ge", p, 0), e.cmp("lt", p, L)]), w, zero) for p, w in zip(pos, ws)]
        total = ws[0]
        for w in ws[1:]:
            total = e.binary("add", total, w)
        ws = [e.binary("div", w, total) for w in ws]
    return [(_clamp(e, p, L), w) for p, w in zip(pos, ws)]


@strategy("image.resize1d", "image.resize2d", "image.resize3d", "nn.upsampling", "nn.upsampling3d")
def resize(e, op, args):
    t = out_type(op)
    x = as_tensor(e, args[0], "data")
    lay = op.data_layout()
    sp = op.spatial
    nd = len(sp)
    ins = lay.primal_shape(x.type.shape)
    outs = lay.primal_shape(t.shape)
    method, mode, rounding, alpha, exclude, extrap, roi = op.params()
    scales = op.attributes.get("scales")
    et = t.element_type

    def body(e, *idx):
        o = primal_index(e, lay, idx)
        axes, outside = [], []
        for j, s in enumerate(sp):
            L, M = ins[s], outs[s]
            scale = scales[j] if scales else M / L
            rs = (roi[j], roi[nd + j]) if roi else (0.0, 1.0)
            xc = _coord(e, o[s], mode, L, M, scale, rs, span=(scale * L - 1) if scales else (M - 1))
            axes.append(_taps(e, xc, L, method, rounding, mode, alpha, exclude))
            if mode == "tf_crop_and_resize":
                outside.append(e.op("arith.ori", [e.cmp("lt", xc, fconst(e, 0.0, F)),
                                                  e.cmp("gt", xc, fconst(e, L - 1, F))], [T.i1]))

        def interp(k, pos):
            """Axes 0..k resampled, as the reference: axis 0 first, each
            axis' taps summed left to right."""
            if k < 0:
                return read_primal(e, x, lay, pos)
            acc = None
            for p, w in axes[k]:
                v = interp(k - 1, {**pos, sp[k]: p})
                if w is None:   # nearest: the element itself, no float round trip
                    acc = v
                    break
                v = e.binary("mul", e.cast(v, F), w)
                acc = v if acc is None else e.binary("add", acc, v)
            if outside:
                acc = e.select(outside[k], fconst(e, extrap, F), e.cast(acc, F))
            return acc
        acc = interp(nd - 1, {"N": o["N"], "C": o["C"]})
        if acc.type is et:
            return acc
        if T.is_float(et):
            return e.cast(e.cast(acc, F) if not T.is_float(acc.type) else acc, et)
        if T.is_float(acc.type):
            return e.cast(e.intrin("round", acc), et)
        return e.cast(acc, et)
    return compute(e, t, body, names=layout_names(lay), name=stage_name(op, "T_resize"))
