"""tir-lower-intrin: rewrite intrinsics a target lacks into arithmetic.

Option ``target=llvm|cuda`` picks the set, ``erf=auto|libm|poly`` and
``tanh=auto|libm|poly`` the erf and tanh strategies:

========  ==========================================  ===================
intrin    lowering                                    targets
========  ==========================================  ===================
sigmoid   1 / (1 + exp(-x))                           llvm, cuda
rsqrt     1 / sqrt(x)                                 llvm (cuda: rsqrtf)
erf       polynomial (below)                          llvm, on vectors
                                                      (libm has no vector
                                                      erf) or erf=poly
========  ==========================================  ===================

The forms are exactly what the interpreter computes for sigmoid and rsqrt,
so results do not change.  erf on f32/f16 (f64 keeps libm: the polynomial
is only good to ~1e-7):

* |x| < 0.5: the Taylor series 2/sqrt(pi) * (x - x^3/3 + x^5/10 - x^7/42
  + x^9/216 - x^11/1320), truncation error below 1.5e-8 relative;
* otherwise Abramowitz and Stegun 7.1.26, with t = 1/(1 + p|x|):
  sign(x) * (1 - t(a1 + t(a2 + t(a3 + t(a4 + t a5)))) exp(-x^2)),
  absolute error below 1.5e-7;

selected per lane, so the whole thing vectorises.  Measured against
``math.erf`` on f32 inputs in [-6, 6]: under 1e-6 absolute.

tanh on f32/f16 vectors (LLVM's ``llvm.tanh`` is a libm call per lane:
GPT-2's GELU epilogue ran its GEMM at 35 GFLOP/s), f64 and scalars keep
libm:

* |x| < 0.55: the Taylor series x - x^3/3 + 2x^5/15 - ... to x^15
  (the next term is under 4e-8 of the value);
* otherwise sign(x) * (1 - 2 / (exp(2|x|) + 1)), with the inline exp;
  an overflowing exp gives 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import types as T
from ....ir.pass_manager import ModulePass, option
from ....ir.rewriter import Rewriter

_AS = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911
_TAYLOR = (1.0, -1.0 / 3, 1.0 / 10, -1.0 / 42, 1.0 / 216, -1.0 / 1320)
_TWO_OVER_SQRT_PI = 1.1283791670955126
# tanh's Taylor coefficients to x^15; below 0.55 the first term left out
# (6404582/10854718875 x^17) is under 4e-8 of tanh(x)
_TANH_TAYLOR = (1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075,
                -929569.0 / 638512875)
_TANH_SMALL = 0.55


class _Builder:
    """Emits ops of one (scalar or vector) float type before an anchor."""

    def __init__(self, rw, anchor, t):
        self.rw, self.anchor, self.t = rw, anchor, t
        self.et = T.element_type(t)

    def _add(self, op):
        self.rw.insert_before(self.anchor, op)
        return op.results[0]

    def k(self, value):
        from ...arith.ops import ConstantOp
        from ..ops import BroadcastOp
        c = self._add(ConstantOp.get(float(value), self.et, self.anchor.loc))
        if isinstance(self.t, T.VectorType):
            c = self._add(BroadcastOp([c], [self.t], None, (), self.anchor.loc))
        return c

    def op(self, name, *args, rt=None):
        from ....ir.registry import get_op_class
        return self._add(get_op_class(name)(list(args), [rt or self.t], None, (), self.anchor.loc))

    def intrin(self, name, x):
        from ..ops import IntrinOp
        return self._add(IntrinOp([x], [self.t], {"intrin": name}, (), self.anchor.loc))

    def cmpf(self, pred, a, b):
        from ....ir.registry import get_op_class
        rt = T.VectorType(self.t.shape, T.i1) if isinstance(self.t, T.VectorType) else T.i1
        return self._add(get_op_class("arith.cmpf")([a, b], [rt], {"predicate": pred}, (), self.anchor.loc))

    def select(self, c, a, b):
        return self.op("arith.select", c, a, b)


def lower_sigmoid(b, x):
    one = b.k(1.0)
    e = b.intrin("exp", b.op("arith.negf", x))
    return b.op("arith.divf", one, b.op("arith.addf", one, e))


def lower_rsqrt(b, x):
    return b.op("arith.divf", b.k(1.0), b.intrin("sqrt", x))


def lower_erf(b, x):
    # small |x|: odd Taylor polynomial in x^2 (Horner)
    x2 = b.op("arith.mulf", x, x)
    acc = b.k(_TAYLOR[-1])
    for c in reversed(_TAYLOR[:-1]):
        acc = b.op("arith.addf", b.op("arith.mulf", acc, x2), b.k(c))
    small = b.op("arith.mulf", b.op("arith.mulf", acc, x), b.k(_TWO_OVER_SQRT_PI))
    # large |x|: Abramowitz-Stegun 7.1.26
    ax = b.intrin("fabs", x)
    one = b.k(1.0)
    t = b.op("arith.divf", one, b.op("arith.addf", one, b.op("arith.mulf", b.k(_P), ax)))
    poly = b.k(_AS[-1])
    for c in reversed(_AS[:-1]):
        poly = b.op("arith.addf", b.op("arith.mulf", poly, t), b.k(c))
    poly = b.op("arith.mulf", poly, t)
    e = b.intrin("exp", b.op("arith.negf", x2))
    mag = b.op("arith.subf", one, b.op("arith.mulf", poly, e))
    neg = b.cmpf("olt", x, b.k(0.0))
    large = b.select(neg, b.op("arith.negf", mag), mag)
    is_small = b.cmpf("olt", ax, b.k(0.5))
    return b.select(is_small, small, large)


def lower_tanh(b, x):
    # small |x|: the odd Taylor series in x^2 (Horner); 1 - 2 / (e + 1)
    # would cancel there
    x2 = b.op("arith.mulf", x, x)
    acc = b.k(_TANH_TAYLOR[-1])
    for c in reversed(_TANH_TAYLOR[:-1]):
        acc = b.op("arith.addf", b.op("arith.mulf", acc, x2), b.k(c))
    small = b.op("arith.mulf", acc, x)
    # large |x|: 1 - 2 / (exp(2|x|) + 1), an overflowing exp giving 1
    ax = b.intrin("fabs", x)
    one = b.k(1.0)
    e = b.intrin("exp", b.op("arith.addf", ax, ax))
    mag = b.op("arith.subf", one, b.op("arith.divf", b.k(2.0), b.op("arith.addf", e, one)))
    large = b.select(b.cmpf("olt", x, b.k(0.0)), b.op("arith.negf", mag), mag)
    return b.select(b.cmpf("olt", ax, b.k(_TANH_SMALL)), small, large)


_LOWER = {"sigmoid": lower_sigmoid, "rsqrt": lower_rsqrt, "erf": lower_erf, "tanh": lower_tanh}


@dataclass
class LowerIntrin(ModulePass):
    """Lower intrinsics the target lacks to arithmetic."""

    NAME = "tir-lower-intrin"
    OP = "tir.func"
    target: str = option("llvm", "the target whose missing intrinsics to lower: llvm or cuda")
    erf: str = option("auto", "erf: auto (a polynomial on llvm vectors), libm (never lowered) or poly (always)")
    tanh: str = option("auto", "tanh: auto (series and exp on llvm vectors), libm (never lowered) or poly (always)")

    def validate(self):
        if self.target not in ("llvm", "cuda"):
            raise ValueError(f"target must be llvm or cuda, got '{self.target}'")
        for name in ("erf", "tanh"):
            if getattr(self, name) not in ("auto", "libm", "poly"):
                raise ValueError(f"{name} must be auto, libm or poly, got '{getattr(self, name)}'")

    def wanted(self, op) -> bool:
        name = op.attributes["intrin"]
        t = op.results[0].type
        if name == "sigmoid":
            return True
        if name == "rsqrt":
            return self.target == "llvm"
        if name in ("erf", "tanh"):
            how = getattr(self, name)
            if T.element_type(t) is T.f64 or how == "libm":
                return False
            return how == "poly" or (self.target == "llvm" and isinstance(t, T.VectorType))
        return False

    def run_on(self, func, ctx):
        from ..ops import IntrinOp
        rw = Rewriter()
        n = 0
        for op in list(func.walk(include_self=False)):
            if isinstance(op, IntrinOp) and self.wanted(op):
                b = _Builder(rw, op, op.results[0].type)
                r = _LOWER[op.attributes["intrin"]](b, op.operands[0])
                rw.replace_op(op, [r])
                n += 1
        if n:
            ctx.stat(self, "intrinsics-lowered", n)
