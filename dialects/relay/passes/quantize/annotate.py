"""Annotate: insert simulated_quantize points (TVM's QuantizeAnnotate).

Each value gets an annotation kind (TVM's QAnnotateKind): None (float, not
quantized), ``input`` (an 8-bit operand of a product), ``weight`` (a
constant operand) or ``activation`` (a 32-bit accumulator).  One forward
walk over @main's body, in program order; each op with a rule below may
wrap some operands in ``annotation.simulated_quantize(x, dom_scale,
clip_min, clip_max) {kind = ...}`` and give its result a kind.  TVM's rules
(python/tvm/relay/quantize/_annotate.py):

    nn.conv2d, nn.dense   lhs -> input (unless already input), rhs -> weight;
                          result activation.  The first conv2d's ... listed in
                          skip_conv_layers are left alone (conv2d ops counted in
                          program order); nn.dense is skipped when
                          skip_dense_layer.
    add, nn.bias_add      one side annotated, the other a constant: that one
                          -> weight; not a constant -> input; both activation:
                          rhs -> input; result activation.  (bias_add is
                          TVM's add after CanonicalizeOps expands it.)
    multiply              one side annotated (-> input if activation), the
                          other -> weight (constant) or input; result activation
    nn.relu, clip, reshape, strided_slice, nn.batch_flatten, transpose,
    nn.avg_pool2d         result keeps the operand's kind
    nn.max_pool2d/1d      activation operand -> input; result input
    concatenate           unannotated inputs -> activation; result activation
    nn.global_avg_pool2d  its result is float and quantization stops here
                          (every later op stays float)

An operand that a rule wants quantized gets one simulated_quantize per
(value, kind), shared by all its users.  A weight that is not a constant
(a parameter) is annotated ``input`` instead, so calibration measures it.
``debug_enabled_ops`` limits the rules to the ops it names.  Values still
annotated where a float op uses them are dequantized by realize.

The quantize points start with dom_scale 1.0 and the clip bounds of their
kind (+-(2^(nbit-1) - 1)); calibrate fills in the scales.  Per-channel
weights (per_channel = true) get ``axis`` = the kernel's output-channel axis.
"""

from __future__ import annotations

from .....ir.builder import Builder
from ...ops.base import RELAY_PREFIX
from .. import defining_constant
from ...ops.function import ConstantOp
from ...ops.qnn import SimulatedQuantizeOp

INPUT, WEIGHT, ACTIVATION = "input", "weight", "activation"


class Annotator:
    def __init__(self, cfg, func):
        self.cfg = cfg
        self.func = func
        self.kind: dict = {}        # value -> annotation kind of that value
        self.cache: dict = {}       # (value, kind) -> simulated_quantize result
        self.points: list = []      # the simulated_quantize ops, in order
        self.conv_counter = 0
        self.stopped = False
        self.consts: dict = {}      # (name, value) -> constant shared at the top
        self.top = None             # the last constant placed at the top
        self.rules = {
            "nn.conv2d": self.conv2d, "nn.dense": self.dense, "add": self.add, "nn.bias_add": self.add,
            "multiply": self.multiply, "nn.max_pool2d": self.max_pool, "nn.max_pool1d": self.max_pool,
            "concatenate": self.concatenate, "nn.global_avg_pool2d": self.global_avg_pool,
        }
        for name in ("nn.relu", "clip", "reshape", "strided_slice", "nn.batch_flatten", "transpose",
                     "nn.avg_pool2d"):
            self.rules[name] = self.identity

    def run(self):
        for op in list(self.func.body.ops):
            name = op.name[len(RELAY_PREFIX):] if op.name.startswith(RELAY_PREFIX) else op.name
            rule = self.rules.get(name)
            if rule is None or not self.cfg.guard(name) or self.check_to_skip(name):
                continue
            kind = rule(op)
            if kind is not None:
                self.kind[op.results[0]] = kind
        return self.points

    # -- TVM's QuantizeContext ------------------------------------------------------

    def check_to_skip(self, name) -> bool:
        if self.stopped:
            return True
        if name == "nn.conv2d":
            index = self.conv_counter
            self.conv_counter += 1
            return index in self.cfg.skip_conv_layers
        return False

    # -- building simulated_quantize ----------------------------------------------------

    def attach(self, op, index, kind, axis=-1):
        """Make operand `index` of `op` go through a simulated_quantize of `kind`."""
        v = op.operands[index]
        d = v.defining_op()
        if isinstance(d, SimulatedQuantizeOp) and d.attributes["kind"] == kind:
            return
        key = (v, kind)
        q = self.cache.get(key)
        if q is None:
            bound = float(self.cfg.clip_bound(kind))
            consts = [self.const(nm, val) for nm, val in
                      (("dom_scale", 1.0), ("clip_min", -bound), ("clip_max", bound))]
            name = f"{v.name}_{kind[0]}q" if v.name and not v.name[0].isdigit() else None   # %x_iq, %w_wq
            q = Builder.before(op).create(SimulatedQuantizeOp, v, *consts, kind=kind, axis=axis, name=name)
            self.cache[key] = q
            self.points.append(q.defining_op())
        op.set_operand(index, q)

    def const(self, name, value):
        """A float32 scalar constant at the top of the function, shared."""
        import numpy as np
        v = self.consts.get((name, value))
        if v is None:
            c = ConstantOp.get(np.array(value, np.float32))
            body = self.func.body
            if self.top is None:
                body.prepend(c)
            else:
                body.insert_after(self.top, c)
            self.top = c
            v = c.results[0]
            v.name = name
            self.consts[(name, value)] = v
        return v

    def is_const(self, op, index) -> bool:
        return defining_constant(op.operands[index]) is not None

    def kinds(self, op):
        return [self.kind.get(v) for v in op.operands]

    # -- rules (each returns the result's kind, or None) --------------------------------------

    def product(self, op, weight_axis):
        lk, _ = self.kinds(op)[:2]
        if lk is None or lk == ACTIVATION:
            self.attach(op, 0, INPUT)
        if self.is_const(op, 1):
            self.attach(op, 1, WEIGHT, weight_axis if self.cfg.per_channel else -1)
        else:
            self.attach(op, 1, INPUT)
        return ACTIVATION

    def conv2d(self, op):
        from ...layouts import Layout
        try:
            axis = Layout(op.attributes.get("kernel_layout", "OIHW")).index("O")
        except (ValueError, KeyError):
            axis = 0
        return self.product(op, axis)

    def dense(self, op):
        if self.cfg.skip_dense_layer:
            return None
        return self.product(op, 0)

    def add(self, op):
        lk, rk = self.kinds(op)
        if lk is None and rk is None:
            return None
        if lk is None:
            self.attach(op, 0, INPUT)
            return ACTIVATION
        if rk is None:
            self.attach(op, 1, WEIGHT if self.is_const(op, 1) else INPUT)
            return ACTIVATION
        if lk == ACTIVATION and rk == ACTIVATION:
            self.attach(op, 1, INPUT)
        return ACTIVATION

    def multiply(self, op):
        lk, rk = self.kinds(op)
        if (lk is None) == (rk is None):
            return None            # neither, or both (TVM raises): leave it float
        a, other = (0, 1) if lk is not None else (1, 0)
        if self.kind[op.operands[a]] == ACTIVATION:
            self.attach(op, a, INPUT)
        self.attach(op, other, WEIGHT if self.is_const(op, other) else INPUT)
        return ACTIVATION

    def identity(self, op):
        return self.kind.get(op.operands[0]) if op.operands else None

    def max_pool(self, op):
        k = self.kind.get(op.operands[0])
        if k is None:
            return None
        if k == ACTIVATION:
            self.attach(op, 0, INPUT)
        return INPUT

    def concatenate(self, op):
        ks = self.kinds(op)
        if all(k is None for k in ks):
            return None
        for i, k in enumerate(ks):
            if k is None:
                self.attach(op, i, ACTIVATION)
        return ACTIVATION

    def global_avg_pool(self, op):
        if self.kind.get(op.operands[0]) is not None:
            self.stopped = True
        return None


def annotate(cfg, func):
    """Annotate relay.func `func` in place; returns its simulated_quantize ops."""
    return Annotator(cfg, func).run()
