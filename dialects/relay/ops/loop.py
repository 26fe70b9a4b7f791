"""``loop``: a counted loop with carried values and stacked per-step outputs.

    %r = loop (%i < 32, %h = %h0, %c = %c0) : tuple<T_h, T_c, tensor<32x1x4xf32>> {
      %x = take(%xs, %i) {axis = 0} : tensor<1x16xf32>
      ...
      yield %h1, %c1, %y        // the next %h and %c, then one step's outputs
    }

Grammar (relay.lark)::

    relay_loop: relay_loop_header region
    relay_loop_header: RELAY_LOOP "(" VALUE "<" INT ("," VALUE "=" VALUE)* ")" [":" type]

The body runs `trip_count` times (an attribute: the count is static, so
every result has a static shape).  Its block arguments are the step index
``%i : tensor<i64>`` (0, 1, ... trip_count - 1) and one value per operand:
the carried state, the operand's value on the first step and what the
previous step yielded for it after.  The body yields the next carried values
(the carried types, exactly) and then any number of per-step outputs.  The
result is always a tuple: the carried values after the last step, then each
per-step output stacked on a new leading axis of length trip_count, in step
order.  The body sees the enclosing scope (a sequence is read a step at a
time with ``take(%xs, %i)``), as ``if`` does; it is what ONNX's Scan and
Loop and the recurrent layers (LSTM, GRU, RNN) become, where TVM's frontend
unrolled them.
"""

from __future__ import annotations

from ....ir import types as T
from ....ir.attrkinds import INT
from ....ir.core import Attr, Operation


def loop_result_type(trip_count, carried, steps):
    """The loop's tuple: carried types, then each step type with a leading trip_count."""
    stacked = []
    for t in steps:
        if not isinstance(t, T.TensorType):
            return None
        stacked.append(T.TensorType((trip_count, *t.shape), t.element_type))
    return T.TupleType((*carried, *stacked))


class LoopOp(Operation):
    __slots__ = ()
    name = "relay.loop"
    OPERANDS = ("*inits",)
    RESULTS = ("result",)
    ATTRS = {"trip_count": Attr(INT)}
    NUM_REGIONS = 1
    traits = frozenset()

    @property
    def trip_count(self) -> int:
        return self.attributes["trip_count"]

    @property
    def body(self):
        return self.regions[0].blocks[0]

    @property
    def index(self):
        """The step index block argument, ``tensor<i64>``."""
        return self.body.args[0]

    @property
    def carried(self):
        """The carried-state block arguments, one per operand."""
        return self.body.args[1:]

    def yield_op(self):
        """The body's ``yield``, checked to yield the carried values first."""
        from .control import ending
        last = ending(self, self.regions[0], "relay.yield", "the body of a 'loop' must be a single block",
                      "the body of a 'loop'", "'loop'")
        k = len(self.operands)
        if len(last.operands) < k:
            raise last.error(f"yields {len(last.operands)} value(s); the 'loop' carries {k}, which come first")
        return last

    def infer_types(self):
        y = self.yield_op()
        k = len(self.operands)
        steps = [v.type for v in y.operands[k:]]
        if not all(t.is_complete for t in steps) or not all(v.type.is_complete for v in self.operands):
            return [T.incomplete]
        rt = loop_result_type(self.trip_count, [v.type for v in self.operands], steps)
        if rt is None:
            bad = next(v for v in y.operands[k:] if not isinstance(v.type, T.TensorType))
            raise y.error(f"a per-step output must be a tensor, got {bad.type}")
        return [rt]

    def verify_(self):
        n = self.trip_count
        if n < 0:
            raise self.error(f"trip_count must be at least 0, got {n}")
        args = self.body.args
        if len(args) != 1 + len(self.operands):
            raise self.error(f"the body takes {len(args)} argument(s); a 'loop' over {len(self.operands)} "
                             f"carried value(s) takes {1 + len(self.operands)}")
        if args[0].type.is_complete and args[0].type != T.TensorType((), T.i64):
            raise self.error(f"the step index is tensor<i64>, not {args[0].type}")
        y = self.yield_op()
        for j, (init, arg, nxt) in enumerate(zip(self.operands, self.carried, y.operands)):
            for what, t in (("argument", arg.type), ("yielded value", nxt.type)):
                if init.type.is_complete and t.is_complete and t != init.type:
                    raise y.error(f"carried value #{j} is {init.type}, but its {what} is {t}",
                                  [(self.loc, "the 'loop' is here")])
        want = self.infer_types()[0]
        got = self.results[0].type
        if want.is_complete and got.is_complete and want != got:
            raise self.error(f"result type {got} does not match the body's {want}")

    def print_custom(self, p):
        if len(self.regions) != 1 or len(self.regions[0].blocks) != 1 or len(self.results) != 1 \
                or len(self.body.args) != 1 + len(self.operands):
            return p.print_generic(self)
        # the block arguments belong to the body's scope
        outer = [p.value(v) for v in self.operands]
        p.write("loop (")
        p.push_scope(isolated=False)
        names = p.define_block_args(self.body)
        p.write(f"{names[0]} < {self.trip_count}")
        for name, init in zip(names[1:], outer):
            p.write(f", {name} = {init}")
        p.write(")")
        t = self.results[0].type
        if t.is_complete:
            p.write(" : " + t._text)
        p.write(" ")
        p.print_region(self.regions[0])
        p.pop_scope()
