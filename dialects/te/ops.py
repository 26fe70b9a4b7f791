"""TE ops: functions of tensor expressions, and the memory ops a schedule makes.

    te.func @f(%A: tensor<4x8xf32>) -> tensor<4xf32> {
      %S = te.compute [%i] reduce [%k: 8] "sum" : tensor<4xf32> {
        %a = te.read %A[%i, %k] : f32
        yield %a
      }
      return %S
    }

* ``te.func``: its parameters are the placeholders (input tensors); it
  returns its output tensors (``te.return``).
* ``te.compute [%i, %j] reduce [%k: N] "sum" : tensor<...> { ... yield %v }``:
  one element of the result.  The entry block's index arguments are the
  spatial axes (extents from the result type) then the reduce axes; a
  reducer (sum, prod, max, min) combines the yielded values over the reduce
  axes, starting from its identity.  ``"argmax"`` / ``"argmin"``: the
  body yields the value compared, the tensor (of an integer type) holds
  the row-major position over the reduce axes of the first extreme one.
  ``reduce [%k: N] @r`` uses the user reducer ``te.reducer @r``.
* ``te.reducer @r(%acc: f32, %x: f32) identity 0.0 { ... yield %v }``: a
  commutative, associative combiner and its identity (module level).
* ``te.read %A[%i, %k] : f32`` and the guarded ``te.read %A[%y, %x] if %c
  else 0.0 : f32`` (reads only where %c holds; the value is 0.0 elsewhere).
* ``te.intrin "exp"(%x) : f32``: a math function.

After ``--apply-schedule`` computes are loop nests (``tir.for``) of
``te.write %v, %T[%i] : f32`` into ``%T = te.realize : tensor<...>``.
Schedule ops live in schedule_ops.py.
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attributes import SymbolRef
from ...ir.attrkinds import ANY, FLAG, FLOAT, INTS, STR, SYMBOL as SYMBOL_REF, TYPE, enum, optional
from ...ir.core import Attr, Operation
from ...ir.traits import ISOLATED_FROM_ABOVE, PURE, SINGLE_BLOCK, SYMBOL, TERMINATOR
from ...ir.func_like import print_func_like, verify_func_like
from ..tir.ops import INTRINSICS, WORD_INTRINSICS, IntrinOpBase   # te lowers to tir, so it may use tir's pieces

REDUCERS = ("sum", "prod", "max", "min", "argmax", "argmin")
# a '?' reduce extent in the reduce_extents attribute; its size is an operand
DYNAMIC_EXTENT = -1
ARG_REDUCERS = ("argmax", "argmin")


class FuncOp(Operation):
    __slots__ = ()
    name = "te.func"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 1
    ATTRS = {"sym_name": Attr(STR), "function_type": Attr(TYPE)}
    traits = frozenset({ISOLATED_FROM_ABOVE, SYMBOL, SINGLE_BLOCK})

    @property
    def function_type(self) -> T.FunctionType:
        return self.attributes["function_type"]

    @property
    def args(self):
        return self.body.args

    @property
    def return_op(self):
        return self.body.last

    def tensor_signature(self):
        """The function as a relay call sees it: without the size
        parameters that lowering a '?' added (``size_args``: the runtime
        passes those, from the tensors' shapes)."""
        ft = self.function_type
        n = len(self.attributes.get("size_args", ()))
        return T.FunctionType(ft.inputs[:len(ft.inputs) - n], ft.results) if n else ft

    def verify_(self):
        verify_func_like(self, "te.return")
        for a in self.body.args:
            if a.type is not T.index and not isinstance(a.type, T.TensorType):
                raise self.error(f"parameters are tensors or index sizes, got {a.type}")

    def print_custom(self, p):
        print_func_like(self, p, "te.func")


class ReducerOp(Operation):
    """``te.reducer @r(%acc: T, %x: T) identity c { ... yield %v }``: a user
    reducer; computes use it as ``reduce [%k: N] @r``.  It must be
    commutative and associative (schedules reorder and split the reduction),
    and ``c`` its identity."""

    __slots__ = ()
    name = "te.reducer"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 1
    ATTRS = {"sym_name": Attr(STR), "identity": Attr(ANY)}
    traits = frozenset({ISOLATED_FROM_ABOVE, SYMBOL, SINGLE_BLOCK})

    @property
    def value_type(self):
        return self.body.args[0].type if self.body.args else None

    def identity_value(self):
        """The identity as a constant of the type holds it (an i32 written
        0xFFFFFFFF is -1)."""
        v, t = self.attributes["identity"], self.value_type
        return float(v) if T.is_float(t) else T.canonical_int(int(v), t)

    def verify_(self):
        args = self.body.args
        if len(args) != 2 or args[0].type is not args[1].type or not (T.is_int(args[0].type) or T.is_float(args[0].type)):
            raise self.error("takes two scalars of one type: (%acc: T, %x: T)")
        last = self.body.last
        if last is None or last.name != "te.yield":
            raise self.error("body must end with 'yield'")
        if len(last.operands) != 1:
            raise last.error(f"yields {len(last.operands)} values; a reducer yields one")
        if last.operands[0].type is not args[0].type:
            raise last.error(f"yields {last.operands[0].type} but the reducer combines {args[0].type}")
        v = self.attributes["identity"]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.error(f"identity must be a number, got {v!r}")
        bad = T.number_error(v, args[0].type)   # the identity becomes a constant of the type
        if bad is not None:
            raise self.error(f"identity: {bad}")

    def print_custom(self, p):
        from ...ir.attributes import print_attr
        p.push_scope()
        try:
            a, b = p.define_block_args(self.body)
            t = self.value_type
            ident = self.identity_value()
            p.write(f"te.reducer @{self.attributes['sym_name']}({a}: {t}, {b}: {t}) identity {print_attr(ident)} ")
            p.print_region(self.region)
        finally:
            p.pop_scope()


class ReturnOp(Operation):
    __slots__ = ()
    name = "te.return"
    OPERANDS = ("*values",)
    RESULTS = ()
    traits = frozenset({TERMINATOR})

    def print_custom(self, p):
        p.write("return")
        if self.operands:
            p.write(" " + p.values(self.operands))


class YieldOp(Operation):
    __slots__ = ()
    name = "te.yield"
    OPERANDS = ("value",)
    RESULTS = ()
    traits = frozenset({TERMINATOR, PURE})

    def print_custom(self, p):
        p.write("yield " + p.value(self.operands[0]))


class ComputeOp(Operation):
    """One stage: a tensor defined element by element by its region."""

    __slots__ = ()
    name = "te.compute"
    OPERANDS = ("*sizes",)   # one index Value per '?' dimension of the result
    RESULTS = ("result",)
    NUM_REGIONS = 1
    ATTRS = {"reduce_extents": Attr(INTS, ()), "reducer": Attr(ANY, None)}   # a REDUCERS name or @reducer
    traits = frozenset({SINGLE_BLOCK})

    @classmethod
    def create(cls, result_type, reduce_extents=(), reducer=None, names=None, reduce_names=None, loc=None):
        """A compute with an empty body; fill it, ending with te.yield."""
        from ...ir.core import Block, Region
        from ...ir.location import UNKNOWN
        rank = len(result_type.shape)
        n = rank + len(reduce_extents)
        names = list(names or [f"i{d}" for d in range(rank)])
        names += list(reduce_names or [f"k{d}" for d in range(len(reduce_extents))])
        block = Block([T.index] * n, names)
        # an index Value is a '?' extent: the caller appends it to the sizes (after the result's)
        attrs = {"reduce_extents": tuple(x if type(x) is int else DYNAMIC_EXTENT for x in reduce_extents),
                 "reducer": reducer}
        return cls((), (result_type,), attrs, [Region([block])], loc or UNKNOWN)

    @property
    def tensor_type(self) -> T.TensorType:
        return self.results[0].type

    @property
    def rank(self):
        return len(self.results[0].type.shape)

    @property
    def spatial_axes(self):
        """The index arguments of the spatial axes, one per result dimension."""
        return self.body.args[:self.rank]

    @property
    def reduce_axes(self):
        return self.body.args[self.rank:]

    @property
    def reducer(self):
        return self.attributes.get("reducer")

    def reducer_op(self):
        """The te.reducer a ``@name`` reducer names (None for a built-in one)."""
        red = self.reducer
        if not isinstance(red, SymbolRef):
            return None
        from ...ir.symbols import lookup_symbol
        r = lookup_symbol(self, red.name)
        return r if r is not None and r.name == "te.reducer" else None

    @property
    def reduce_extents(self):
        """Ints, and the size Values of '?' extents (the operands after
        the result's sizes)."""
        rext = tuple(self.attributes.get("reduce_extents", ()))
        if DYNAMIC_EXTENT not in rext:
            return rext
        it = iter(self.operands[sum(1 for d in self.results[0].type.shape if d is None):])
        return tuple(next(it) if x == DYNAMIC_EXTENT else x for x in rext)

    @property
    def shape(self):
        """The result's dimensions: ints, and the size Values of '?' ones."""
        return dynamic_shape(self.results[0].type, self.operands)

    @property
    def extents(self):
        """Extents of every index argument: the result shape, then the reduce extents."""
        return self.shape + self.reduce_extents

    @property
    def yielded(self):
        return self.body.last.operands[0]

    def verify_(self):
        t = self.results[0].type
        if not isinstance(t, T.TensorType):
            raise self.error(f"result must be a tensor, got {t}")
        raw = tuple(self.attributes.get("reduce_extents", ()))
        check_sizes(self, t, sum(1 for x in raw if x == DYNAMIC_EXTENT))
        if any(type(e) is not int or (e < 1 and e != DYNAMIC_EXTENT) for e in raw):
            raise self.error(f"reduce extents must be positive integers (or '?'), got {list(raw)}")
        rext = raw
        for e in rext:
            if msg := T.index_error(e, "reduce extent"):
                raise self.error(msg)
        if bool(rext) != (self.reducer is not None):
            raise self.error("a reducer and reduce axes go together" if rext
                             else f"reducer \"{self.reducer}\" needs reduce axes")
        args = self.body.args
        if len(args) != t.rank + len(rext) or any(a.type is not T.index for a in args):
            raise self.error(f"body takes {t.rank} spatial and {len(rext)} reduce index arguments")
        last = self.body.last
        if last is None or last.name != "te.yield":
            raise self.error("body must end with 'yield'")
        if len(last.operands) != 1:
            raise last.error(f"yields {len(last.operands)} values; a compute yields one")
        red = self.reducer
        if red is not None and not isinstance(red, SymbolRef) and red not in REDUCERS:
            raise self.error(f"unknown reducer {red!r}: one of {', '.join(REDUCERS)}, or @name of a te.reducer")
        if isinstance(red, SymbolRef):
            r = self.reducer_op()
            if r is None:
                raise self.error(f"reducer @{red.name} is not a te.reducer of this module")
            if r.value_type is not t.element_type:
                raise self.error(f"reducer @{red.name} combines {r.value_type}, the tensor holds {t.element_type}")
        if red in ARG_REDUCERS:
            if not (T.is_int(t.element_type) or t.element_type is T.index):
                raise self.error(f"an {red} tensor holds integer positions, not {t.element_type}")
            vt = last.operands[0].type
            if not (T.is_int(vt) or T.is_float(vt) or vt is T.index):
                raise last.error(f"yields {vt}; an {red} compares scalars (an integer or a float)")
            return
        if last.operands[0].type is not t.element_type:
            raise last.error(f"yields {last.operands[0].type} but the tensor holds {t.element_type}")

    def print_custom(self, p):
        p.push_scope(isolated=False)   # the axes' names belong to this compute
        try:
            self._print_body(p)
        finally:
            p.pop_scope()

    def _print_body(self, p):
        args = p.define_block_args(self.body)
        rank = self.rank
        p.write("te.compute [" + ", ".join(args[:rank]) + "]")
        if self.operands:
            p.write(f" ({p.values(self.operands)})")
        if self.reduce_extents:
            raw = self.attributes["reduce_extents"]
            axes = ", ".join(f"{n}: {'?' if e == DYNAMIC_EXTENT else e}" for n, e in zip(args[rank:], raw))
            red = self.reducer
            p.write(f" reduce [{axes}] " + (f"@{red.name}" if isinstance(red, SymbolRef) else f'"{red}"'))
        p.write(f" : {self.results[0].type}")
        rest = {k: v for k, v in self.attributes.items() if k not in self.ATTRS}
        if rest:
            p.write(" attributes " + p.attr_dict(rest))
        p.write(" ")
        p.print_region(self.region)


def dynamic_shape(t, sizes):
    """t's shape with each '?' replaced by the next of `sizes`."""
    it = iter(sizes)
    return tuple(next(it) if n is None else n for n in t.shape)


def check_sizes(op, t, dynamic_reduce=0):
    """One index operand per '?' dimension of t (then one per '?' reduce
    extent)."""
    n = sum(1 for d in t.shape if d is None)
    if len(op.operands) != n + dynamic_reduce:
        extra = f" and {dynamic_reduce} dynamic reduce extent(s)" if dynamic_reduce else ""
        raise op.error(f"{t} has {n} dynamic dimension(s){extra} but {len(op.operands)} size(s) were given")
    for v in op.operands:
        if v.type is not T.index:
            raise op.error(f"sizes are index values, got {v.type}")


def _check_indices(op, tensor, indices, what):
    t = tensor.type
    if not isinstance(t, T.TensorType):
        raise op.error(f"{what} a {t}, not a tensor")
    if len(indices) != t.rank:
        raise op.error(f"gives {len(indices)} indices for a rank-{t.rank} tensor")
    for v in indices:
        if v.type is not T.index:
            raise op.error(f"indices must be index values, got {v.type}")
    return t


class ReadOp(Operation):
    """``te.read %A[idx] : T``, or guarded: operands end with an i1
    condition and the ``else_value`` attribute is the value where it fails.
    Not Pure: after scheduling it reads storage that te.write changes."""

    __slots__ = ()
    name = "te.read"
    OPERANDS = ("tensor", "*indices")
    RESULTS = ("result",)
    ATTRS = {"else_value": Attr(optional(FLOAT), None)}

    @property
    def guarded(self) -> bool:
        return self.attributes.get("else_value") is not None

    @property
    def tensor(self):
        return self.operands[0]

    @property
    def indices(self):
        return self.operands[1:-1] if self.guarded else self.operands[1:]

    @property
    def condition(self):
        return self.operands[-1] if self.guarded else None

    def verify_(self):
        t = _check_indices(self, self.operands[0], self.indices, "reads")
        if self.results[0].type is not t.element_type:
            raise self.error(f"result type {self.results[0].type} is not the element type {t.element_type}")
        if self.guarded and self.operands[-1].type is not T.i1:
            raise self.error(f"guard must be i1, got {self.operands[-1].type}")
        if self.guarded and (T.is_float(t.element_type) or T.is_int(t.element_type)):
            # the else value becomes a constant of the element type
            bad = T.number_error(float(self.attributes["else_value"]), t.element_type, canonical=True)
            if bad is not None:
                raise self.error(f"else value: {bad}")

    def print_custom(self, p):
        from ...ir.attributes import print_attr
        p.write(f"te.read {p.value(self.tensor)}[{p.values(self.indices)}]")
        if self.guarded:
            ev = self.attributes["else_value"]
            p.write(f" if {p.value(self.condition)} else {print_attr(ev)}")
        p.write(f" : {self.results[0].type}")


class WriteOp(Operation):
    """``te.write %v, %T[idx] : f32``: store into realized storage."""

    __slots__ = ()
    name = "te.write"
    OPERANDS = ("value", "tensor", "*indices")
    RESULTS = ()

    def verify_(self):
        v, t, *idx = self.operands
        tt = _check_indices(self, t, idx, "writes")
        if v.type is not tt.element_type:
            raise self.error(f"writes a {v.type} into a tensor of {tt.element_type}")
        d = t.defining_op()
        if d is None or d.name != "te.realize":
            raise self.error("writes only into storage made by te.realize")

    ASSEMBLY_FORMAT = "$value `,` $tensor `[` $indices `]` attr-dict `:` type($value)"


class RealizeOp(Operation):
    """``%T = te.realize : tensor<...>``: storage for a scheduled stage;
    ``te.realize {scope = "shared", double_buffer} : tensor<...>`` puts it
    in a memory scope and marks it for double buffering.  After
    storage_align the type is the padded shape."""

    __slots__ = ()
    name = "te.realize"
    OPERANDS = ("*sizes",)   # one index Value per '?' dimension
    RESULTS = ("result",)
    ATTRS = {"scope": Attr(optional(enum("global", "shared", "local")), None),
             "double_buffer": Attr(optional(FLAG), None)}

    def verify_(self):
        t = self.results[0].type
        if not isinstance(t, T.TensorType):
            raise self.error(f"realizes a tensor, got {t}")
        check_sizes(self, t)

    ASSEMBLY_FORMAT = "(`(` $sizes^ `)`)? attr-dict `:` type($result)"


class ExternOp(Operation):
    """``%C = te.extern @k(%A, %B) : tensor<8x8xf32>``: a stage computed by an
    opaque kernel, the tir.func @k of this module, called with the inputs
    (buffers, and ``index`` sizes) then the output buffer (TVM's
    te.extern).  A '?' of the result is sized by the index inputs, the
    first for the first '?' and so on.  Schedules cannot look inside it;
    --apply-schedule turns it into ``te.extern_call``."""

    __slots__ = ()
    name = "te.extern"
    OPERANDS = ("*inputs",)
    RESULTS = ("result",)
    ATTRS = {"callee": Attr(SYMBOL_REF)}

    def callee_op(self):
        from ...ir.symbols import lookup_symbol
        return lookup_symbol(self, self.attributes["callee"].name)

    def result_sizes(self):
        """The index inputs that size the result's '?' dimensions, in order."""
        n = sum(1 for d in self.results[0].type.shape if d is None)
        return [v for v in self.operands if v.type is T.index][:n]

    def verify_(self):
        check_extern_call(self, list(self.operands) + [self.results[0]])
        t = self.results[0].type
        n = sum(1 for d in t.shape if d is None)
        if len(self.result_sizes()) < n:
            raise self.error(f"{t} has {n} dynamic dimension(s); the call gives "
                             f"{len(self.result_sizes())} index input(s) to size them")

    ASSEMBLY_FORMAT = "$callee `(` $inputs `)` attr-dict `:` type($result)"


class ExternCallOp(Operation):
    """``te.extern_call @k(%A, %B, %C)``: a scheduled te.extern, writing its
    last operand (a te.realize)."""

    __slots__ = ()
    name = "te.extern_call"
    OPERANDS = ("*buffers",)
    RESULTS = ()
    ATTRS = {"callee": Attr(SYMBOL_REF)}

    callee_op = ExternOp.callee_op

    def verify_(self):
        check_extern_call(self, list(self.operands))
        d = self.operands[-1].defining_op() if self.operands else None
        if d is None or d.name != "te.realize":
            raise self.error("writes its last operand, which must be storage made by te.realize")

    ASSEMBLY_FORMAT = "$callee `(` $buffers `)` attr-dict"


def check_extern_call(op, values):
    """The callee is a tir.func taking a buffer of each tensor value's
    type, or an index for each index value, in order."""
    name = op.attributes["callee"].name
    f = op.callee_op()
    if f is None or f.name != "tir.func":
        raise op.error(f"@{name} is not a tir.func of this module")
    params = list(f.body.args)
    if len(params) != len(values) or f.attributes.get("num_outputs", 1) != 1:
        raise op.error(f"@{name} takes {len(params)} buffer(s) with {f.attributes.get('num_outputs', 1)} "
                       f"output(s); the call passes {len(values) - 1} input(s) and one output")
    for k, (a, v) in enumerate(zip(params, values)):
        t = v.type
        if t is T.index and a.type is T.index:
            continue
        if not isinstance(t, T.TensorType) or not isinstance(a.type, T.MemRefType) or \
                tuple(a.type.shape) != tuple(t.shape) or a.type.element_type is not t.element_type:
            raise op.error(f"argument #{k} of @{name} is {a.type}, the call gives {t}")


class IntrinOp(IntrinOpBase):
    """``te.intrin "exp"(%x) : f32`` (the checks and the form are tir.intrin's;
    ``fma`` is left to the targets)."""

    __slots__ = ()
    name = "te.intrin"
    KNOWN = {**{k: v for k, v in INTRINSICS.items() if k != "fma"}, **{k: 2 for k in WORD_INTRINSICS}}