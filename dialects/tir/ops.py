"""TIR ops: prim functions over buffers, loops with kinds, loads, stores.

    tir.func @add_relu(%A: memref<1024xf32>, %B: memref<1024xf32>, %C: memref<1024xf32>)
        attributes {num_outputs = 1} {
      tir.for %i = 0 to 1024 parallel {
        %a = tir.load %A[%i] : f32
        %b = tir.load %B[%i] : f32
        %s = arith.addf %a, %b : f32
        %z = arith.constant 0.0 : f32
        %r = arith.maximumf %s, %z : f32
        tir.store %r, %C[%i] : f32
      }
    }

* ``tir.func``: arguments are buffers (``memref``) and scalars (``index``
  for symbolic sizes); the last ``num_outputs`` buffers are the outputs.
  Its regions need no terminator.
* ``tir.for %i = LB to UB KIND``: LB and UB are integer literals or index
  values; KIND is serial (default), parallel, vectorized, unrolled, or
  ``thread("threadIdx.x")`` for a GPU thread binding.
* ``tir.load`` / ``tir.store``: n-d indices (row-major); the result type
  is the element type, or ``vector<NxT>`` for N consecutive elements.
* ``tir.alloc``: a buffer living until the end of its block; its scope
  (``memref<..., "shared">``) says where.
* ``tir.if %cond { ... } else { ... }``, ``tir.intrin "exp"(%x) : f32``
  (math functions; ``"dot4_u8s8"(%a, %b) : i32``, the sum of the products
  of a's four bytes as unsigned and b's as signed, what x86's vpdpbusd
  adds per lane; ``"dot2_bf16"(%a, %b) : f32``, the same of two i32 words'
  bf16 halves, what vdpbf16ps adds), ``tir.barrier`` (``__syncthreads``).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.attrkinds import ANY, FLAG, INT, STR, enum, optional
from ...ir.attrkinds import SYMBOL as SYMBOL_REF
from ...ir.core import Attr, Operation
from ...ir.printer import print_symbol
from ...ir.traits import ISOLATED_FROM_ABOVE, NO_TERMINATOR, PURE, SYMBOL, SINGLE_BLOCK

LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread")
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
               "vthread")


class FuncOp(Operation):
    __slots__ = ()
    name = "tir.func"
    OPERANDS = ()
    RESULTS = ()
    NUM_REGIONS = 1
    ATTRS = {"sym_name": Attr(STR), "num_outputs": Attr(INT, 1)}
    traits = frozenset({ISOLATED_FROM_ABOVE, SYMBOL, NO_TERMINATOR, SINGLE_BLOCK})

    @property
    def args(self):
        return self.body.args

    @property
    def buffer_args(self):
        return [a for a in self.body.args if isinstance(a.type, T.MemRefType)]

    @property
    def outputs(self):
        n = self.attributes["num_outputs"]
        bufs = self.buffer_args
        return bufs[len(bufs) - n:]

    @property
    def inputs(self):
        n = self.attributes["num_outputs"]
        bufs = self.buffer_args
        return bufs[:len(bufs) - n]

    def tensor_signature(self):
        """The function as a relay call sees it: input tensors -> output tensor(s)."""
        def tt(m):
            return T.TensorType(m.shape, m.element_type)
        return T.FunctionType([tt(a.type) for a in self.inputs], [tt(a.type) for a in self.outputs])

    def verify_(self):
        n = self.attributes["num_outputs"]
        if n < 0 or n > len(self.buffer_args):
            raise self.error(f"num_outputs = {n} but the function has {len(self.buffer_args)} buffer argument(s)")
        for a in self.body.args:
            if not isinstance(a.type, (T.MemRefType, T.IndexType, T.IntegerType, T.FloatType)):
                raise self.error(f"argument of type {a.type}: expected a memref or a scalar")

    def print_custom(self, p):
        p.write(f"tir.func {print_symbol(self.attributes['sym_name'])}(")
        p.push_scope()
        p.write(", ".join(f"{p.define(a)}: {a.type}" for a in self.body.args))
        p.write(")")
        rest = {k: v for k, v in self.attributes.items()
                if k != "sym_name" and not (k == "num_outputs" and v == 1)}
        if rest:
            p.write(" attributes " + p.attr_dict(rest))
        p.write(" ")
        p.print_region(self.region)
        p.pop_scope()


class ForOp(Operation):
    """A loop.  Static bounds are the attributes ``lower``/``upper``; a
    dynamic bound is an operand (``lower``/``upper`` then absent)."""

    __slots__ = ()
    name = "tir.for"
    OPERANDS = ("*bounds",)
    RESULTS = ()
    NUM_REGIONS = 1
    ATTRS = {
        "lower": Attr(optional(INT), None),
        "upper": Attr(optional(INT), None),
        "kind": Attr(enum(*LOOP_KINDS), "serial"),
        "thread": Attr(optional(enum(*THREAD_TAGS)), None),
    }
    traits = frozenset({NO_TERMINATOR, SINGLE_BLOCK})

    @classmethod
    def create(cls, lower, upper, kind="serial", thread=None, name="i", loc=None, annotations=None):
        """A loop over [lower, upper); each bound an int or an index Value."""
        from ...ir.core import Block, Region, Value
        from ...ir.location import UNKNOWN
        operands, attrs = [], {"kind": kind, "thread": thread}
        for key, b in (("lower", lower), ("upper", upper)):
            if isinstance(b, Value):
                operands.append(b)
            else:
                attrs[key] = int(b)
        attrs.update(annotations or {})
        block = Block([T.index], [name])
        return cls(operands, (), attrs, [Region([block])], loc or UNKNOWN)

    @property
    def induction_var(self):
        return self.body.args[0]

    def _bound(self, key, idx):
        v = self.attributes.get(key)
        if v is not None:
            return v
        dyn = [k for k in ("lower", "upper") if self.attributes.get(k) is None]
        return self.operands[dyn.index(key)]

    @property
    def lower(self):
        """An int, or the index Value of a dynamic bound."""
        return self._bound("lower", 0)

    @property
    def upper(self):
        return self._bound("upper", 1)

    @property
    def kind(self):
        return self.attributes["kind"]

    @property
    def static_extent(self):
        lo, hi = self.attributes.get("lower"), self.attributes.get("upper")
        return hi - lo if lo is not None and hi is not None else None

    def annotations(self):
        return {k: v for k, v in self.attributes.items() if k not in self.ATTRS and v is not None}

    def verify_(self):
        a = self.attributes
        n_dyn = (a.get("lower") is None) + (a.get("upper") is None)
        if len(self.operands) != n_dyn:
            raise self.error(f"has {len(self.operands)} bound operand(s) but {n_dyn} dynamic bound(s)")
        for key in ("lower", "upper"):
            if a.get(key) is not None and (msg := T.index_error(a[key], f"loop bound {key} =")):
                raise self.error(msg)
        if self.static_extent is not None and (msg := T.index_error(self.static_extent, "loop extent")):
            raise self.error(msg)
        for v in self.operands:
            if v.type is not T.index:
                raise self.error(f"a dynamic bound must be an index, got {v.type}")
        body = self.body
        if len(body.args) != 1 or body.args[0].type is not T.index:
            raise self.error("the body takes one index argument, the induction variable")
        if a["kind"] == "thread" and not a.get("thread"):
            raise self.error("a thread loop needs a thread tag, e.g. thread(\"threadIdx.x\")")
        if a["kind"] != "thread" and a.get("thread"):
            raise self.error(f"a {a['kind']} loop has no thread tag")

    def print_custom(self, p):
        p.push_scope(isolated=False)   # the induction variable belongs to the loop
        try:
            self._print(p)
        finally:
            p.pop_scope()

    def _print(self, p):
        iv = p.define(self.induction_var)

        def bound(key):
            v = self.attributes.get(key)
            return str(v) if v is not None else p.value(self._bound(key, 0))
        p.write(f"tir.for {iv} = {bound('lower')} to {bound('upper')}")
        kind = self.attributes["kind"]
        if kind == "thread":
            p.write(f' thread("{self.attributes["thread"]}")')
        elif kind != "serial":
            p.write(" " + kind)
        ann = self.annotations()
        if ann:
            p.write(" attributes " + p.attr_dict(ann))
        p.write(" ")
        p.print_region(self.region)


def _check_access(op, buf, indices, value_type):
    bt = buf.type
    if not isinstance(bt, T.MemRefType):
        raise op.error(f"accesses a {bt}, not a memref")
    if len(indices) != bt.rank:
        raise op.error(f"gives {len(indices)} indices for a rank-{bt.rank} buffer")
    for v in indices:
        if v.type is not T.index:
            raise op.error(f"indices must be index values, got {v.type}")
    et = bt.element_type
    if isinstance(value_type, T.VectorType):
        if value_type.element_type is not et or value_type.rank != 1:
            raise op.error(f"vector type {value_type} does not match buffer element type {et}")
    elif value_type is not et:
        raise op.error(f"value type {value_type} does not match buffer element type {et}")


class LoadOp(Operation):
    __slots__ = ()
    name = "tir.load"
    OPERANDS = ("buffer", "*indices")
    RESULTS = ("result",)
    traits = frozenset({PURE})   # reads only: CSE and DCE may act on it within a scope without stores

    def verify_(self):
        _check_access(self, self.operands[0], self.operands[1:], self.results[0].type)

    ASSEMBLY_FORMAT = "$buffer `[` $indices `]` attr-dict `:` type($result)"


class StoreOp(Operation):
    __slots__ = ()
    name = "tir.store"
    OPERANDS = ("value", "buffer", "*indices")
    RESULTS = ()

    def verify_(self):
        v, b, *idx = self.operands
        _check_access(self, b, idx, v.type)

    ASSEMBLY_FORMAT = "$value `,` $buffer `[` $indices `]` attr-dict `:` type($value)"


class PrefetchOp(Operation):
    """``tir.prefetch %A[%i, %j] : memref<...>``: a hint that the cache line
    holding that element will be read soon (te.prefetch makes it).  The
    indices may run past a dimension, not past what the flat address
    reaches: a prefetch never faults, and reading the next panel of a
    packed weight is indexing its k past the end.  LLVM: llvm.prefetch
    into the L2 cache; the interpreter and CUDA ignore it."""

    __slots__ = ()
    name = "tir.prefetch"
    OPERANDS = ("buffer", "*indices")
    RESULTS = ()

    def verify_(self):
        b, *idx = self.operands
        bt = b.type
        # (a tensor while lower-te-to-tir has not yet replaced it by its buffer)
        if not isinstance(bt, (T.MemRefType, T.TensorType)):
            raise self.error(f"prefetches from a {bt}, not a memref")
        if len(idx) != bt.rank:
            raise self.error(f"gives {len(idx)} indices for a rank-{bt.rank} buffer")
        if any(v.type is not T.index for v in idx):
            raise self.error("indices must be index values")

    ASSEMBLY_FORMAT = "$buffer `[` $indices `]` attr-dict `:` type($buffer)"


class AllocOp(Operation):
    """``%B = tir.alloc {double_buffer} : memref<...>``; the optional unit
    attribute asks tir-inject-double-buffer to double it.  A '?' dimension
    takes its size from an index operand, one per '?' in order (MLIR's
    memref.alloc): ``%B = tir.alloc(%n) : memref<4x?xf32>``, local storage
    whose size is known only at run time (a row of scores as long as the
    sequence)."""

    __slots__ = ()
    name = "tir.alloc"
    OPERANDS = ("*sizes",)
    RESULTS = ("result",)
    ATTRS = {"double_buffer": Attr(optional(FLAG), None)}

    def verify_(self):
        t = self.results[0].type
        if not isinstance(t, T.MemRefType):
            raise self.error(f"allocates a memref, got {t}")
        n = sum(1 for d in t.shape if d is None)
        if len(self.operands) != n:
            raise self.error(f"{t} has {n} dynamic dimension(s) but {len(self.operands)} size(s) were given")
        if any(v.type is not T.index for v in self.operands):
            raise self.error("sizes must be index values")
        if n and t.scope not in (None, "global"):
            raise self.error(f"a '{t.scope}' buffer needs a static shape, got {t}")
        if n and self.attributes.get("double_buffer"):
            raise self.error(f"a double-buffered allocation needs a static shape, got {t}")

    def dims(self):
        """Each dimension: its static size, or its size operand."""
        sizes = iter(self.operands)
        return [d if d is not None else next(sizes) for d in self.results[0].type.shape]

    ASSEMBLY_FORMAT = "(`(` $sizes^ `)`)? attr-dict `:` type($result)"


class IfOp(Operation):
    __slots__ = ()
    name = "tir.if"
    OPERANDS = ("condition",)
    RESULTS = ()
    traits = frozenset({NO_TERMINATOR, SINGLE_BLOCK})

    def verify_(self):
        if len(self.regions) not in (1, 2):
            raise self.error("has a then region and an optional else region")
        if self.operands[0].type is not T.i1:
            raise self.error(f"condition must be i1, got {self.operands[0].type}")

    @property
    def then_block(self):
        return self.regions[0].blocks[0]

    @property
    def else_block(self):
        return self.regions[1].blocks[0] if len(self.regions) > 1 else None

    def print_custom(self, p):
        p.write(f"tir.if {p.value(self.operands[0])} ")
        p.print_region(self.regions[0])
        if len(self.regions) > 1:
            p.write(" else ")
            p.print_region(self.regions[1])


# math functions tir.intrin (and te.intrin) know: name -> arity
INTRINSICS = {
    "exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "sigmoid": 1, "erf": 1, "fabs": 1,
    "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "sin": 1, "cos": 1, "pow": 2, "fma": 3,
    "log2": 1, "log10": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1,
    "asinh": 1, "acosh": 1, "atanh": 1,
}

# dot products of two i32 words (or i32 vectors) of packed narrow values:
# name -> the result's element type.  Each is a lane of an x86 dot-product
# instruction without its accumulator; LLVM's codegen folds the add that
# takes it into the instruction's accumulator.
#   dot4_u8s8(a, b): sum over bytes i < 4 of u8(a >> 8i) * s8(b >> 8i)
#       (words little-endian), in i32: vpdpbusd (AVX512-VNNI, AVX-VNNI)
#   dot2_bf16(a, b): hi(a) * hi(b) + lo(a) * lo(b), the bf16 halves as f32
#       (the products are exact), in f32: vdpbf16ps (AVX512-BF16)
WORD_INTRINSICS = {"dot4_u8s8": T.i32, "dot2_bf16": T.f32}


class IntrinOpBase(Operation):
    """``<name> "exp"(%x) : f32``: a math function on floats (or float
    vectors), or one of WORD_INTRINSICS on i32 words; te.intrin shares the
    checks and the form."""

    __slots__ = ()
    OPERANDS = ("*args",)
    RESULTS = ("result",)
    ATTRS = {"intrin": Attr(STR)}
    traits = frozenset({PURE})
    KNOWN = {**INTRINSICS, **{k: 2 for k in WORD_INTRINSICS}}

    def verify_(self):
        name = self.attributes["intrin"]
        arity = self.KNOWN.get(name)
        if arity is None:
            raise self.error(f"unknown intrinsic '{name}' (known: {', '.join(self.KNOWN)})")
        if len(self.operands) != arity:
            raise self.error(f"'{name}' takes {arity} argument(s), got {len(self.operands)}")
        t = self.results[0].type
        if name in WORD_INTRINSICS:
            want = WORD_INTRINSICS[name]
            if T.element_type(t) is not want:
                raise self.error(f"'{name}' gives {want}, got {t}")
            words = T.VectorType(t.shape, T.i32) if isinstance(t, T.VectorType) else T.i32
            for v in self.operands:
                if v.type is not words:
                    raise self.error(f"'{name}' takes i32 words ({words}), got {v.type}")
            return
        if not T.is_float(T.element_type(t)):
            raise self.error(f"'{name}' computes on floats, got {t}")
        for v in self.operands:
            if v.type is not t:
                raise self.error(f"argument type {v.type} differs from the result type {t}")

    ASSEMBLY_FORMAT = "$intrin `(` $args `)` attr-dict `:` type($result)"


class IntrinOp(IntrinOpBase):
    __slots__ = ()
    name = "tir.intrin"


class LaunchOp(Operation):
    """``"tir.launch"(%A, %n) {callee = @f_kernel0} : (memref<...>, index) -> ()``:
    run the device kernel @callee (a tir.func marked ``kernel``) on these
    arguments, its grid and block given by its thread-bound loops.  Made by
    ``tir-split-host-device``; the host function keeps the launches."""

    __slots__ = ()
    name = "tir.launch"
    OPERANDS = ("*args",)
    RESULTS = ()
    ATTRS = {"callee": Attr(SYMBOL_REF)}

    @property
    def callee(self):
        return self.attributes["callee"].name


class BroadcastOp(Operation):
    """``%v = tir.broadcast %x : vector<8xf32>``: a vector with the scalar
    %x in every lane (TVM's Broadcast); tir-vectorize makes it for
    loop-invariant operands of vectorised arithmetic."""

    __slots__ = ()
    name = "tir.broadcast"
    OPERANDS = ("value",)
    RESULTS = ("result",)
    traits = frozenset({PURE})

    def verify_(self):
        t = self.results[0].type
        if not isinstance(t, T.VectorType) or t.rank != 1:
            raise self.error(f"result must be a 1-d vector, got {t}")
        if t.element_type is not self.operands[0].type:
            raise self.error(f"broadcasts a {self.operands[0].type} into {t}: element types differ")

    ASSEMBLY_FORMAT = "$value attr-dict `:` type($result)"


class BarrierOp(Operation):
    __slots__ = ()
    name = "tir.barrier"
    OPERANDS = ()
    RESULTS = ()

    ASSEMBLY_FORMAT = "attr-dict"


ANNOTATION = ANY
