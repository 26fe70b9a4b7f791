"""The optimizer steps of the ``ai.onnx.preview.training`` domain:
Adagrad, Momentum, Adam, written with elementwise ops as ONNX defines them.

Inputs are R (learning rate) and T (step count, int64), then n tensors to
optimize, their n gradients and their n (or 2n for Adam) accumulators;
outputs the updated tensors, then the updated accumulators.  T enters
through where / power, so a prepared model serves every step.
"""

from __future__ import annotations

from ....ir import types as T
from ..registry import converter

DOMAIN = "ai.onnx.preview.training"


def _groups(cx, node, k):
    """(R, T, [[X, G, acc...] per tensor]) for k tensors per group."""
    r, t = node.input(0), node.input(1)
    rest = list(node.inputs[2:])
    if len(rest) % k:
        raise cx.error(f"expects 2 + {k} x n inputs, got {len(node.inputs)}")
    n = len(rest) // k
    return r, t, [[rest[j * n + i] for j in range(k)] for i in range(n)]


def _regularized(cx, x, g, coeff):
    if not coeff:
        return g
    return cx.op("add", cx.op("multiply", x, cx.scalar(coeff, x)), g)


def _s(cx, value, like):
    return cx.scalar(value, like)


@converter("Adagrad", 1, domain=DOMAIN)
def adagrad(cx, node):
    r, t, groups = _groups(cx, node, 3)
    decay, eps, coeff = node.attr("decay_factor", 0.0), node.attr("epsilon", 1e-6), node.attr("norm_coefficient", 0.0)
    tf = cx.cast(t, cx.dtype(r))
    rate = cx.op("divide", r, cx.op("add", _s(cx, 1, r), cx.op("multiply", tf, _s(cx, decay, r))))
    xs, hs = [], []
    for x, g, h in groups:
        gr = _regularized(cx, x, g, coeff)
        h_new = cx.op("add", h, cx.op("multiply", gr, gr))
        adaptive = cx.op("add", cx.op("sqrt", h_new), _s(cx, eps, x))
        xs.append(cx.op("subtract", x, cx.op("multiply", rate, cx.op("divide", gr, adaptive))))
        hs.append(h_new)
    return xs + hs


@converter("Momentum", 1, domain=DOMAIN)
def momentum(cx, node):
    r, t, groups = _groups(cx, node, 3)
    alpha, beta, coeff = node.attr("alpha"), node.attr("beta"), node.attr("norm_coefficient")
    mode = node.attr("mode", "standard")
    if mode not in ("standard", "nesterov"):
        raise cx.error(f"mode must be 'standard' or 'nesterov', got '{mode}'")
    first = cx.op("greater", t, cx.const(0, T.i64))
    xs, vs = [], []
    for x, g, v in groups:
        gr = _regularized(cx, x, g, coeff)
        b = cx.op("where", first, _s(cx, beta, x), _s(cx, 1, x))     # no beta on the first step
        v_new = cx.op("add", cx.op("multiply", v, _s(cx, alpha, x)), cx.op("multiply", b, gr))
        step = v_new if mode == "standard" else cx.op("add", gr, cx.op("multiply", v_new, _s(cx, alpha, x)))
        xs.append(cx.op("subtract", x, cx.op("multiply", r, step)))
        vs.append(v_new)
    return xs + vs


@converter("Adam", 1, domain=DOMAIN)
def adam(cx, node):
    r, t, groups = _groups(cx, node, 4)
    alpha, beta = node.attr("alpha", 0.9), node.attr("beta", 0.999)
    eps, coeff = node.attr("epsilon", 1e-6), node.attr("norm_coefficient", 0.0)
    post = node.attr("norm_coefficient_post", 0.0)
    tf = cx.cast(t, cx.dtype(r))
    # bias correction from the second step on: R * sqrt(1 - beta^T) / (1 - alpha^T)
    corr = cx.op("divide", cx.op("sqrt", cx.op("subtract", _s(cx, 1, r), cx.op("power", _s(cx, beta, r), tf))),
                 cx.op("subtract", _s(cx, 1, r), cx.op("power", _s(cx, alpha, r), tf)))
    rate = cx.op("where", cx.op("greater", t, cx.const(0, T.i64)), cx.op("multiply", r, corr), r)
    xs, vs, hs = [], [], []
    for x, g, v, h in groups:
        gr = _regularized(cx, x, g, coeff)
        v_new = cx.op("add", cx.op("multiply", v, _s(cx, alpha, x)), cx.op("multiply", gr, _s(cx, 1 - alpha, x)))
        h_new = cx.op("add", cx.op("multiply", h, _s(cx, beta, x)),
                      cx.op("multiply", cx.op("multiply", gr, gr), _s(cx, 1 - beta, x)))
        denom = cx.op("add", cx.op("sqrt", h_new), _s(cx, eps, x))
        x_new = cx.op("subtract", x, cx.op("multiply", rate, cx.op("divide", v_new, denom)))
        if post:
            x_new = cx.op("multiply", x_new, _s(cx, 1 - post, x))
        xs.append(x_new)
        vs.append(v_new)
        hs.append(h_new)
    return xs + vs + hs
