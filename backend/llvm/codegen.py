"""tir → LLVM IR (llvmlite.ir), one LLVM function per tir.func.

Calling convention: see :mod:`tvmd.backend.abi` (buffers are ``ptr noalias``
to their first element, ``index`` is ``i64``, hidden ``i64``
dynamic dimensions at the end, outputs written in place, ``void`` result).

Lowering, op by op:

* ``tir.for`` → a canonical loop (preheader, header with the ``i64`` phi,
  body, latch, exit).  ``unrolled`` puts ``llvm.loop.unroll.full`` on the
  latch branch (static extents only); ``vectorized`` puts
  ``llvm.loop.vectorize.enable`` and ``llvm.loop.vectorize.width`` (the
  largest power of two <= min(extent, 16)) on loops LLVM can vectorise
  (innermost, no vector values, no call without a vector form), and nothing
  on the others, for which LLVM would only print warnings; a serial loop
  with the ``pragma_llvm_vectorize = W`` annotation (``te.pragma %k
  {llvm_vectorize = W}``) gets ``llvm.loop.vectorize.width`` W, which
  also allows LLVM to vectorize a float reduction (W lanes of partial
  sums) and, unlike ``vectorize.enable``, no warning where it cannot;
  a thread-bound loop runs serially (a barrier in it is an error: it needs
  the CUDA target).  ``parallel`` → the body is outlined into a worker
  function and run through ``__tvmd_parallel_for`` on all cores (declared
  here, defined by the thread-pool runtime of :mod:`.parallel`); a parallel
  loop inside another runs serially.
* ``tir.load`` / ``tir.store`` → ``getelementptr inbounds`` on the
  row-major linearised index (``nsw`` index arithmetic) and a load/store
  aligned to the element; ``vector<N>`` accesses load/store ``<N x T>``.
* ``tir.alloc`` → an ``alloca`` in the function's entry block (align 64) up
  to 64 KiB, else ``aligned_alloc`` where it stands and ``free`` at the end of
  its block.  In an outlined worker the alloca is per thread.
* ``tir.prefetch`` → ``llvm.prefetch`` into L2 at a plain (not inbounds)
  getelementptr.
* ``tir.if`` → branches; ``tir.intrin`` → :mod:`.intrinsics`;
  ``tir.barrier`` outside thread loops → nothing; ``tir.broadcast`` → a
  splat (insertelement + zero shufflevector).
* arith: integer ops (``nsw`` on index add/sub/mul), ``floordivsi`` /
  ``floormodsi`` rounding toward minus infinity (``sdiv``/``srem`` and a fix-up
  when the remainder's sign differs from the divisor's), ``llvm.smax``/``smin``,
  float ops with only the ``contract`` fast-math flag (a multiply and an
  add may become one fma, as C compilers do by default), ``maximumf``/``minimumf`` as
  ``llvm.maximum``/``minimum`` (NaN-propagating, like numpy), comparisons,
  select and casts (``index_cast``/``extsi``/``sitofp`` read i1 and unsigned
  sources as unsigned), as :mod:`tvmd.dialects.arith.semantics` defines them.
"""

from __future__ import annotations

from llvmlite import ir

from ...dialects.arith import ops as A
from ...dialects.tir import ops as tir
from ...ir import minifloat
from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from .. import abi
from ..names import comment_text, llvm_symbols
from . import minifloat as mf_llvm
from .intrinsics import DOT_INSTRUCTIONS, LLVM_INTRINSIC, dot_accumulate, emit_intrinsic, intrinsic
from .irutil import I32, I64, PTR, VOID, BFloatType, alloca, c64, declare, loop_metadata
from .parallel import WORKER_TYPE, free_values, parallel_for

# te.pragma %k {llvm_vectorize = W}: vectorize a serial (reduction) loop
VECTORIZE_PRAGMA = "pragma_llvm_vectorize"
ALLOCA_LIMIT = 64 * 1024   # bytes; larger allocs go to the heap
# tir.prefetch's llvm.prefetch locality: 2 fills L2 (prefetcht1).  Into L1
# (3) the next panel of a weight would evict the one being read
PREFETCH_LOCALITY = 2
BUFFER_ALIGN = 64
MAX_VECTORIZE_WIDTH = 16
# C functions the generated code may call; a kernel must not take their names
RESERVED_NAMES = frozenset({"free", "aligned_alloc", "getenv", "strtol", "sysconf", "pthread_create",
                            "pthread_join", "pthread_detach", "getpid", "syscall", "erf", "erff"})


def llvm_type(t):
    """The LLVM type of a tir value type."""
    if t is T.index:
        return I64
    if isinstance(t, T.IntegerType):
        return ir.IntType(t.width)
    if T.is_minifloat(t):
        return ir.IntType(8)   # the bits; arithmetic in f32 (backend/llvm/minifloat.py)
    if isinstance(t, T.FloatType):
        return {"f16": ir.HalfType(), "bf16": BFloatType(), "f32": ir.FloatType(), "f64": ir.DoubleType()}[t.kind]
    if isinstance(t, T.VectorType):
        return ir.VectorType(llvm_type(t.element_type), t.lanes)
    if isinstance(t, T.MemRefType):
        return PTR
    raise TypeError(f"no LLVM type for {t}")


def mem_type(t):
    """The LLVM type of a tir scalar or vector type in memory: a byte per
    element for the integers narrower than one (i1, i2, i4: LLVM packs
    their vectors bit by bit), the value type otherwise."""
    et = T.element_type(t)
    if isinstance(et, T.IntegerType) and et.width < 8:
        return ir.VectorType(ir.IntType(8), t.lanes) if isinstance(t, T.VectorType) else ir.IntType(8)
    return llvm_type(t)


def elem_size(t) -> int:
    """Bytes per element of a scalar tir type."""
    if t is T.index:
        return 8
    return max(t.bitwidth // 8, 1)


_CMPI = {"eq": ("s", "=="), "ne": ("s", "!="), "slt": ("s", "<"), "sle": ("s", "<="), "sgt": ("s", ">"),
         "sge": ("s", ">="), "ult": ("u", "<"), "ule": ("u", "<="), "ugt": ("u", ">"), "uge": ("u", ">=")}
_CMPF = {"oeq": ("o", "=="), "one": ("o", "!="), "olt": ("o", "<"), "ole": ("o", "<="), "ogt": ("o", ">"),
         "oge": ("o", ">="), "ueq": ("u", "=="), "une": ("u", "!="), "ult": ("u", "<"), "ule": ("u", "<="),
         "ugt": ("u", ">"), "uge": ("u", ">=")}
_INT_BINARY = {A.AddIOp: "add", A.SubIOp: "sub", A.MulIOp: "mul", A.DivSIOp: "sdiv", A.RemSIOp: "srem",
               A.DivUIOp: "udiv", A.RemUIOp: "urem",
               A.AndIOp: "and_", A.OrIOp: "or_", A.XOrIOp: "xor"}
_NSW = (A.AddIOp, A.SubIOp, A.MulIOp)   # index arithmetic does not wrap
_FLOAT_BINARY = {A.AddFOp: "fadd", A.SubFOp: "fsub", A.MulFOp: "fmul", A.DivFOp: "fdiv", A.RemFOp: "frem"}
# ``contract`` lets LLVM fuse a multiply feeding an add into one fma (one
# rounding instead of two: never less accurate); no other fast-math flag.
_CONTRACTABLE = (A.AddFOp, A.SubFOp, A.MulFOp)
_INTRINSIC_BINARY = {A.MaxSIOp: "llvm.smax", A.MinSIOp: "llvm.smin", A.MaxUIOp: "llvm.umax", A.MinUIOp: "llvm.umin",
                     A.MaximumFOp: "llvm.maximum",
                     A.MinimumFOp: "llvm.minimum"}
_INT_CASTS = (A.IndexCastOp, A.ExtSIOp, A.ExtUIOp, A.TruncIOp)
# float ops that bf16 operands run in f32 (CodeGen.arith)
_BF16_PROMOTED = (*_FLOAT_BINARY, A.PowFOp, A.MaximumFOp, A.MinimumFOp, A.NegFOp, A.CmpFOp)


def _vectorizable(loop) -> bool:
    """Whether LLVM's loop vectoriser can take this loop: innermost, no
    vector-typed values, no intrinsic without a vector form.  Only such loops
    get vectorize metadata: LLVM prints a warning on stderr for every loop
    whose metadata it cannot honour; the others are left to its own
    judgement (it may still vectorise them)."""
    for o in loop.walk(include_self=False):
        if isinstance(o, tir.ForOp):
            return False
        if isinstance(o, tir.IntrinOp) and o.attributes["intrin"] not in LLVM_INTRINSIC and \
                o.attributes["intrin"] not in ("rsqrt", "sigmoid"):
            return False
        if any(isinstance(r.type, T.VectorType) for r in o.results):
            return False
    return True


class ModuleCodegen:
    """Builds one llvmlite module from any number of tir.funcs."""

    def __init__(self, name="tvmd", triple=None, data_layout=None, dot_lanes=None):
        # per dot intrinsic, the widths of the instruction the CPU has (widest first)
        self.dot_lanes = {k: tuple(sorted(v, reverse=True)) for k, v in (dot_lanes or {}).items()}
        self.module = ir.Module(name=name)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.signatures = []
        self._workers = 0

    def add_func(self, func_op):
        name = func_op.sym_name
        # the LLVM symbol: backend.names, recomputed from the signatures' names by the loader
        symbol = llvm_symbols([s.name for s in self.signatures] + [name])[-1]
        if any(n in RESERVED_NAMES or n.startswith(("llvm.", "__tvmd")) for n in (name, symbol)):
            raise DiagnosticError(func_op.loc, f"'tir.func' op name '@{comment_text(name)}' is reserved: the "
                                               f"generated code calls a C function or runtime helper of that name")
        sig = abi.signature(func_op)
        FuncCodegen(self, func_op, sig, symbol=symbol).emit()
        self.signatures.append(sig)
        return sig

    def new_worker_name(self, base):
        self._workers += 1
        return f"{base}.parallel.{self._workers}"

    def add_manifest(self):
        """``__tvmd_manifest``: the JSON description an object file carries."""
        from .irutil import I8
        data = bytearray(abi.manifest_text(self.signatures).encode() + b"\0")
        ty = ir.ArrayType(I8, len(data))
        g = ir.GlobalVariable(self.module, ty, "__tvmd_manifest")
        g.global_constant = True
        g.initializer = ir.Constant(ty, data)


class FuncCodegen:
    """Emits one LLVM function: the tir.func itself, or an outlined worker."""

    def __init__(self, mod: ModuleCodegen, func_op, sig, in_parallel=False, symbol=None):
        self.mod = mod
        self.symbol = symbol or func_op.sym_name
        self.m = mod.module
        self.func_op = func_op
        self.sig = sig
        self.values: dict = {}     # tir Value -> LLVM value
        self.dims: dict = {}       # buffer Value -> [int | LLVM i64] per dimension
        self.in_parallel = in_parallel
        self.fn = None
        self.b = None
        self.entry = None
        self.heap: list = []       # per open block: pointers to free at its end

    # -- function shell -----------------------------------------------------

    def emit(self):
        f = self.func_op
        params = self.sig.params
        types = [PTR if isinstance(a.type, T.MemRefType) else llvm_type(a.type) for a in f.args]
        types += [I64] * (len(params) - len(types))     # hidden dynamic dimensions
        fnty = ir.FunctionType(VOID, types)
        fn = ir.Function(self.m, fnty, self.symbol)
        for p, arg in zip(params, fn.args):
            arg.name = p.name
            if p.kind == "buffer":
                # no alignment beyond the element's: a caller's numpy array goes in as it is
                arg.add_attribute("noalias")
        self._open(fn)
        for i, a in enumerate(f.args):
            self.values[a] = fn.args[i]
            if isinstance(a.type, T.MemRefType):
                self.dims[a] = list(a.type.shape)
        for k, p in enumerate(params):
            if p.kind == "dim":
                self.dims[f.args[p.buffer]][p.axis] = fn.args[k]
        self.block(f.body)
        self._close()

    def _open(self, fn):
        self.fn = fn
        self.entry = fn.append_basic_block("entry")   # allocas only; branches to start at the end
        start = fn.append_basic_block("start")
        self.b = ir.IRBuilder(start)
        self.start = start

    def _close(self):
        self.b.ret_void()
        ir.IRBuilder(self.entry).branch(self.start)

    def error(self, op, msg):
        return DiagnosticError(op.loc, f"'{op.name}' op {msg}")

    # -- blocks and ops -----------------------------------------------------

    def block(self, block):
        self.heap.append([])
        for op in block.ops:
            h = _HANDLERS.get(type(op))
            if h is None:
                if isinstance(op, A.ArithOp):
                    self.arith(op)
                    for r in op.results:
                        self._name(r)
                    continue
                raise self.error(op, "cannot be compiled to LLVM")
            else:
                h(self, op)
            for r in op.results:
                self._name(r)
        freed = self.heap.pop()
        if freed:
            free = declare(self.m, "free", VOID, [PTR])
            for p in reversed(freed):
                self.b.call(free, [p])

    def _name(self, r):
        """Name the LLVM value after the tir value (``%a``), for readable IR."""
        x = self.values.get(r)
        if r.name and isinstance(x, ir.Instruction) and x.name.startswith("."):
            x.name = r.name

    def v(self, value):
        return self.values[value]

    # arith ------------------------------------------------------------------

    def op_arith_constant(self, op):
        t = op.results[0].type
        val = op.attributes["value"]
        lt = llvm_type(t)
        if T.is_minifloat(T.element_type(t)):
            import numpy as np
            val = int(np.array(float(val), np.float32).astype(T.to_numpy_dtype(T.element_type(t))).view(np.uint8))
        elif isinstance(lt, ir.IntType):
            val = int(val)
            if lt.width == 1:
                val = 1 if val else 0
        else:
            val = float(val)
        self.values[op.results[0]] = ir.Constant(lt, val)

    def dot_width(self, name, t):
        """The width (lanes) of the instruction that computes intrinsic
        `name` (a DOT_INSTRUCTIONS one) of tir type t in whole pieces (a
        power of two of them), or None: a scalar, or a CPU without it."""
        if not isinstance(t, T.VectorType) or name not in DOT_INSTRUCTIONS:
            return None
        n = t.shape[0]
        return next((w for w in self.mod.dot_lanes.get(name, ()) if n % w == 0 and (n // w) & (n // w - 1) == 0),
                    None)

    def fused_dot(self, op):
        """(acc, dot, lanes) when `op` is ``addi(acc, dot4_u8s8(a, b))`` or
        ``addf(acc, dot2_bf16(a, b))`` (either order) whose dot has no other
        use and an instruction of the CPU computes: the add is the
        instruction's accumulator (vpdpbusd, vdpbf16ps)."""
        if type(op) is not A.AddIOp and type(op) is not A.AddFOp:
            return None
        for k in (0, 1):
            d = op.operands[k].defining_op()
            if isinstance(d, tir.IntrinOp) and op.operands[k].has_one_use():
                lanes = self.dot_width(d.attributes["intrin"], op.results[0].type)
                if lanes is not None:
                    return op.operands[1 - k], d, lanes
        return None

    def arith(self, op):
        b = self.b
        cls = type(op)
        r = op.results[0]
        fused = self.fused_dot(op)
        if fused is not None:
            acc, dot, lanes = fused
            self.values[r] = dot_accumulate(self.m, b, dot.attributes["intrin"], self.v(acc),
                                            *(self.v(x) for x in dot.operands), lanes)
            return
        args = [self.v(x) for x in op.operands]
        rt = r.type
        if cls in _BF16_PROMOTED and any(T.is_minifloat(T.element_type(x.type)) for x in op.operands):
            # 8-bit floats: computed in f32, rounded back
            f32s = [self.minifloat_decode(a, x.type) for x, a in zip(op.operands, args)]
            out = self.arith_values(op, f32s, T.f32)
            self.values[r] = self.minifloat_encode(out, rt) if T.is_minifloat(T.element_type(rt)) else out
            return
        if cls in _BF16_PROMOTED and any(T.element_type(x.type) is T.bf16 for x in op.operands):
            # bf16 arithmetic in f32, rounded back (LLVM's own promotion ends
            # in a __truncsfbf2 call the JIT lacks on CPUs without AVX512-BF16)
            f32s = [b.fpext(a, ir.VectorType(ir.FloatType(), a.type.count) if isinstance(a.type, ir.VectorType)
                            else ir.FloatType()) if T.element_type(x.type) is T.bf16 else a
                    for x, a in zip(op.operands, args)]
            out = self.arith_values(op, f32s, T.f32)
            if T.element_type(rt) is T.bf16:
                out = self.truncf_bf16(out, llvm_type(rt))
            self.values[r] = out
            return
        if cls in (A.ShLIOp, A.ShRSIOp, A.ShRUIOp):
            out = self.shift(cls, *args)
        elif cls in _INT_BINARY:
            out = getattr(b, _INT_BINARY[cls])(*args)
            if rt is T.index and cls in _NSW:
                out.flags.append("nsw")
        elif cls is A.FloorDivSIOp:
            out = self.floordiv(*args)
        elif cls is A.FloorModSIOp:
            out = self.floormod(*args)
        elif cls in _FLOAT_BINARY:
            out = getattr(b, _FLOAT_BINARY[cls])(*args)
            if cls in _CONTRACTABLE:
                out.flags.append("contract")
        elif cls is A.PowFOp:
            out = self.powf(b, *args)
        elif cls in _INTRINSIC_BINARY:
            out = b.call(intrinsic(self.m, _INTRINSIC_BINARY[cls], args[0].type, 2), args)
        elif cls is A.NegFOp:
            out = b.fneg(args[0])
        elif cls is A.CmpIOp:
            kind, pred = _CMPI[op.attributes["predicate"]]
            out = (b.icmp_signed if kind == "s" else b.icmp_unsigned)(pred, *args)
        elif cls is A.CmpFOp:
            kind, pred = _CMPF[op.attributes["predicate"]]
            out = (b.fcmp_ordered if kind == "o" else b.fcmp_unordered)(pred, *args)
        elif cls is A.SelectOp:
            out = b.select(*args)
        else:
            out = self.cast(op, args[0])
        self.values[r] = out

    def arith_values(self, op, args, rt):
        """The float op `op` on LLVM values `args` (of element type `rt`)."""
        b = self.b
        cls = type(op)
        if cls in _FLOAT_BINARY:
            out = getattr(b, _FLOAT_BINARY[cls])(*args)
            if cls in _CONTRACTABLE:
                out.flags.append("contract")
            return out
        if cls is A.PowFOp:
            return self.powf(b, *args)
        if cls in _INTRINSIC_BINARY:
            return b.call(intrinsic(self.m, _INTRINSIC_BINARY[cls], args[0].type, 2), args)
        if cls is A.NegFOp:
            return b.fneg(args[0])
        kind, pred = _CMPF[op.attributes["predicate"]]
        return (b.fcmp_ordered if kind == "o" else b.fcmp_unordered)(pred, *args)

    def shift(self, cls, a, n):
        """numpy's shifts: the amount is read as unsigned, and one of at least
        the bit width (a negative one included) gives 0 (shl, lshr) or the
        sign fill (ashr).  LLVM's shifts are poison there, so the amount is
        clamped to width - 1 first: that is already the sign fill for ashr;
        shl and lshr then select 0."""
        b = self.b
        t = a.type
        width = (t.element if isinstance(t, ir.VectorType) else t).width
        ok = b.icmp_unsigned("<", n, self._splat(a, width))
        amount = b.select(ok, n, self._splat(a, width - 1))
        if cls is A.ShRSIOp:
            return b.ashr(a, amount)
        shifted = b.lshr(a, amount) if cls is A.ShRUIOp else b.shl(a, amount)
        return b.select(ok, shifted, self._splat(a, 0))

    def _splat(self, like, value):
        t = like.type
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
        return ir.Constant(t, value)

    def floordiv(self, a, c):
        """floor(a / c): sdiv rounds toward zero, so subtract one when the
        remainder is non-zero and its sign differs from the divisor's."""
        b = self.b
        q = b.sdiv(a, c)
        r = b.srem(a, c)
        fix = b.and_(b.icmp_signed("!=", r, self._splat(r, 0)),
                     b.icmp_signed("<", b.xor(r, c), self._splat(r, 0)))
        return b.sub(q, b.zext(fix, q.type))

    def floormod(self, a, c):
        b = self.b
        r = b.srem(a, c)
        fix = b.and_(b.icmp_signed("!=", r, self._splat(r, 0)),
                     b.icmp_signed("<", b.xor(r, c), self._splat(r, 0)))
        return b.select(fix, b.add(r, c), r)

    def powf(self, b, x, y):
        """libm's pow, with its two exact cases made explicit: pow(x, +-0)
        and pow(1, y) are 1 for every x and y, NaN included.  llvm.pow
        lowered for vectors (or folded) need not keep them: pow(nan, -0.0)
        came back NaN."""
        from llvmlite import ir
        out = b.call(intrinsic(self.m, "llvm.pow", x.type, 2), [x, y])
        one = ir.Constant(x.type, 1.0) if not isinstance(x.type, ir.VectorType) else \
            ir.Constant(x.type, [ir.Constant(x.type.element, 1.0)] * x.type.count)
        zero = ir.Constant(y.type, None)
        exact = b.or_(b.fcmp_ordered("==", y, zero), b.fcmp_ordered("==", x, one))
        return b.select(exact, one, out)

    def cast(self, op, x):
        b = self.b
        cls = type(op)
        src = T.element_type(op.operands[0].type)
        dst_t = llvm_type(op.results[0].type)
        if cls in _INT_CASTS:
            sw = x.type.element.width if isinstance(x.type, ir.VectorType) else x.type.width
            dw = dst_t.element.width if isinstance(dst_t, ir.VectorType) else dst_t.width
            if sw == dw:
                return x
            if dw < sw:
                return b.trunc(x, dst_t)
            zero_ext = cls is A.ExtUIOp or src is T.i1 or getattr(src, "unsigned", False)
            return b.zext(x, dst_t) if zero_ext else b.sext(x, dst_t)
        if cls is A.BitcastOp:
            return b.bitcast(x, dst_t)
        dst = T.element_type(op.results[0].type)
        if T.is_minifloat(src) or T.is_minifloat(dst):
            return self.minifloat_cast(cls, x, src, dst, dst_t)
        if cls is A.SIToFPOp and (src is T.i1 or getattr(src, "unsigned", False)):
            cls = A.UIToFPOp   # i1 and uiN sources read as unsigned (dialects/arith/semantics.py)
        if cls is A.TruncFOp and T.element_type(op.results[0].type) is T.bf16:
            return self.truncf_bf16(x, dst_t)
        if cls in (A.FPToSIOp, A.FPToUIOp) and isinstance(dst, T.IntegerType) and 1 < dst.width < 8:
            return self.fptoi_narrow(x, dst, dst_t)
        conv = {A.SIToFPOp: b.sitofp, A.UIToFPOp: b.uitofp, A.FPToSIOp: b.fptosi,
                A.FPToUIOp: b.fptoui, A.ExtFOp: b.fpext, A.TruncFOp: b.fptrunc}.get(cls)
        if conv is None:
            raise self.error(op, "cannot be compiled to LLVM")
        return conv(x, dst_t)

    def fptoi_narrow(self, x, dst, dst_t):
        """A float to an i2 / i4 (ui2 / ui4): truncated toward zero, and 0
        when that is out of the type's range or x is NaN (ml_dtypes', so the
        interpreter's and ONNX's reference; LLVM's fptosi would be poison)."""
        b = self.b
        vec = isinstance(x.type, ir.VectorType)
        t = ir.VectorType(I32, x.type.count) if vec else I32
        lo, hi = (0, (1 << dst.width) - 1) if dst.unsigned else (-(1 << (dst.width - 1)), (1 << (dst.width - 1)) - 1)
        if isinstance(x.type.element if vec else x.type, (ir.HalfType, BFloatType)):
            x = b.fpext(x, ir.VectorType(ir.FloatType(), x.type.count) if vec else ir.FloatType())
        ft = x.type
        tr = b.call(intrinsic(self.m, "llvm.trunc", ft), [x])
        ok = b.and_(b.fcmp_ordered(">=", tr, self._splat(x, float(lo))), b.fcmp_ordered("<=", tr, self._splat(x, float(hi))))
        safe = b.select(ok, tr, self._splat(x, 0.0))
        return b.trunc(b.fptosi(safe, t), dst_t)

    def minifloat_decode(self, v, t):
        """`v` of tir type `t` as f32 if `t` is an 8-bit float, else `v`."""
        fmt = minifloat.format_of(T.element_type(t))
        return mf_llvm.decode(self.b, v, fmt) if fmt else v

    def minifloat_encode(self, v, t):
        """f32 or f64 `v` rounded to the 8-bit float type `t`."""
        return mf_llvm.encode(self.b, v, minifloat.format_of(T.element_type(t)), self.m)

    def minifloat_cast(self, cls, x, src, dst, dst_t):
        """A cast from or to an 8-bit float, through f32 (f64 from f64 and
        integers, so that the one rounding is to the 8-bit format)."""
        b = self.b
        vec = isinstance(x.type, ir.VectorType)

        def ty(t):
            return ir.VectorType(t, x.type.count) if vec else t
        if T.is_minifloat(src):
            x, src = self.minifloat_decode(x, src), T.f32
            if T.is_minifloat(dst):
                return self.minifloat_encode(x, dst)
            if T.is_float(dst):
                if dst is T.bf16:
                    return self.truncf_bf16(x, dst_t)
                return x if dst is T.f32 else (b.fpext(x, dst_t) if dst is T.f64 else b.fptrunc(x, dst_t))
            if isinstance(dst, T.IntegerType) and 1 < dst.width < 8:
                return self.fptoi_narrow(x, dst, dst_t)
            unsigned = cls is A.FPToUIOp
            return b.fptoui(x, dst_t) if unsigned else b.fptosi(x, dst_t)
        if T.is_float(src):
            if src is not T.f64 and src is not T.f32:
                x = b.fpext(x, ty(ir.FloatType()))
        elif src is T.i1 or getattr(src, "unsigned", False) or cls is A.UIToFPOp:
            x = b.uitofp(x, ty(ir.DoubleType()))
        else:
            x = b.sitofp(x, ty(ir.DoubleType()))
        return self.minifloat_encode(x, dst)

    def truncf_bf16(self, x, dst_t):
        """f32 (or f64, through f32) to bf16, rounded to nearest even in
        integer arithmetic: bits + 0x7FFF + (bit 16), the top half; a NaN
        keeps its sign and top payload, made quiet.  LLVM's fptrunc to
        bfloat is a call to compiler-rt's __truncsfbf2 on CPUs without
        AVX512-BF16, a symbol the JIT does not have (the call jumped to
        nowhere); the integer form is the same everywhere."""
        b = self.b
        vec = isinstance(x.type, ir.VectorType)
        n = x.type.count if vec else None

        def ty(t):
            return ir.VectorType(t, n) if vec else t

        def const(t, v):
            return ir.Constant(ty(t), [v] * n) if vec else ir.Constant(t, v)
        f32 = ty(ir.FloatType())
        if (x.type.element if vec else x.type) != ir.FloatType():
            x = b.fptrunc(x, f32)
        bits = b.bitcast(x, ty(I32))
        top = b.lshr(bits, const(I32, 16))
        rounded = b.lshr(b.add(b.add(bits, const(I32, 0x7FFF)), b.and_(top, const(I32, 1))), const(I32, 16))
        nan = b.fcmp_unordered("uno", x, x)
        out = b.select(nan, b.or_(top, const(I32, 0x40)), rounded)
        return b.bitcast(b.trunc(out, ty(ir.IntType(16))), dst_t)

    # memory -----------------------------------------------------------------

    def address(self, buf, indices, inbounds=True):
        """Pointer to element `indices` of `buf` (row-major); `inbounds`
        False for an address that may lie past the buffer (tir.prefetch)."""
        b = self.b
        dims = self.dims[buf]
        idx = [self.v(i) for i in indices]
        lin = idx[0] if idx else c64(0)
        for d, i in zip(dims[1:], idx[1:]):
            dv = c64(d) if isinstance(d, int) else d
            m = b.mul(lin, dv)
            m.flags.append("nsw")
            lin = b.add(m, i)
            lin.flags.append("nsw")
        et = mem_type(buf.type.element_type)
        return b.gep(self.v(buf), [lin], inbounds=inbounds, source_etype=et)

    def op_tir_load(self, op):
        buf, *idx = op.operands
        ptr = self.address(buf, idx)
        t = op.results[0].type
        align = elem_size(buf.type.element_type)
        mt, vt = mem_type(t), llvm_type(t)
        if mt != vt:
            # a byte per element (mem_type): a bool is non-zero; an i2 / i4 its low bits
            wide = self.b.load(ptr, typ=mt, align=align)
            self.values[op.results[0]] = (self.b.icmp_unsigned("!=", wide, self._splat(wide, 0))
                                          if T.element_type(t) is T.i1 else self.b.trunc(wide, vt))
            return
        self.values[op.results[0]] = self.b.load(ptr, typ=vt, align=align)

    def op_tir_store(self, op):
        val, buf, *idx = op.operands
        ptr = self.address(buf, idx)
        v = self.v(val)
        mt = mem_type(val.type)
        if mt != v.type:
            v = self.b.zext(v, mt)   # a byte per element, the upper bits zero (ml_dtypes' int4 as well)
        self.b.store(v, ptr, align=elem_size(buf.type.element_type))

    def op_tir_alloc(self, op):
        t = op.results[0].type
        et = mem_type(t.element_type)
        dims = [d if isinstance(d, int) else self.v(d) for d in op.dims()]
        nbytes = t.num_elements() * elem_size(t.element_type) if t.is_static else None
        if nbytes is not None and nbytes <= ALLOCA_LIMIT:
            p = alloca(ir.IRBuilder(self.entry), ir.ArrayType(et, t.num_elements()), align=BUFFER_ALIGN)
        else:
            # the heap: too large for the stack, or a size known only here;
            # aligned_alloc wants a multiple of the alignment
            if nbytes is not None:
                rounded = c64((nbytes + BUFFER_ALIGN - 1) // BUFFER_ALIGN * BUFFER_ALIGN)
            else:
                size = c64(elem_size(t.element_type))
                for d in dims:
                    size = self.b.mul(size, c64(d) if isinstance(d, int) else d)
                rounded = self.b.and_(self.b.add(size, c64(BUFFER_ALIGN - 1)), c64(-BUFFER_ALIGN))
            aligned_alloc = declare(self.m, "aligned_alloc", PTR, [I64, I64])
            p = self.b.call(aligned_alloc, [c64(BUFFER_ALIGN), rounded])
            self.heap[-1].append(p)
        self.values[op.results[0]] = p
        self.dims[op.results[0]] = dims

    # control flow -----------------------------------------------------------

    def bound(self, b):
        return c64(b) if isinstance(b, int) else self.v(b)

    def op_tir_for(self, op):
        kind = op.kind
        if kind == "thread" and op.attributes.get("thread") != "vthread":
            barrier = next((o for o in op.walk(include_self=False) if isinstance(o, tir.BarrierOp)), None)
            if barrier is not None:
                raise self.error(barrier, "synchronises GPU threads, which a CPU does not run: compile "
                                          "this function for CUDA (tvm-translate --emit=cuda)")
        if kind == "parallel" and not self.in_parallel:
            return self.parallel(op)
        props = []
        ext = op.static_extent
        if kind == "unrolled" and ext is not None:
            props.append(("llvm.loop.unroll.full",))
        elif kind == "vectorized":
            width = 1
            limit = min(ext, MAX_VECTORIZE_WIDTH) if ext is not None else MAX_VECTORIZE_WIDTH
            while width * 2 <= limit:
                width *= 2
            if _vectorizable(op):
                props += [("llvm.loop.vectorize.enable", True), ("llvm.loop.vectorize.width", width)]
        elif kind == "serial" and op.attributes.get(VECTORIZE_PRAGMA) is not None and _vectorizable(op):
            # a reduction loop: the hint lets LLVM reassociate the sum (lanes of
            # partial sums, a horizontal add at the end), which it never does
            # unasked without fast-math
            width = int(op.attributes[VECTORIZE_PRAGMA])
            if width > 1:
                props += [("llvm.loop.vectorize.width", width)]
        self.loop(self.bound(op.lower), self.bound(op.upper), op.induction_var,
                  lambda: self.block(op.body), props)

    def loop(self, lo, hi, iv, body, props=()):
        b = self.b
        pre = b.block
        header = self.fn.append_basic_block("for.header")
        body_bb = self.fn.append_basic_block("for.body")
        latch = self.fn.append_basic_block("for.latch")
        exit_bb = self.fn.append_basic_block("for.end")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=iv.name or "i")
        i.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", i, hi), body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.values[iv] = i
        body()
        for bb in (latch, exit_bb):    # keep the blocks in source order
            self.fn.blocks.remove(bb)
            self.fn.blocks.append(bb)
        b.branch(latch)
        b.position_at_end(latch)
        nxt = b.add(i, c64(1))
        nxt.flags.append("nsw")
        i.add_incoming(nxt, latch)
        br = b.branch(header)
        if props:
            br.set_metadata("llvm.loop", loop_metadata(self.m, props))
        b.position_at_end(exit_bb)

    def parallel(self, op):
        """Outline the loop into ``body(captured..., lo, hi)`` (buffers stay
        ``noalias`` parameters, so the vectoriser needs no runtime alias
        checks), a worker ``(closure, lo, hi)`` that unpacks the closure and
        calls it, and a call to the runtime's ``__tvmd_parallel_for``."""
        b = self.b
        captured = []     # (key, LLVM value): tir values, then dynamic dims of captured buffers
        constants = {}    # need no capture: the body uses them directly
        for v in free_values(op):
            x = self.v(v)
            if isinstance(x, ir.Constant):
                constants[v] = x
                continue
            captured.append((v, x))
            if v in self.dims:   # dynamic dims the linearisation needs (not the first)
                for ax, d in enumerate(self.dims[v]):
                    if ax > 0 and not isinstance(d, int):
                        captured.append(((v, ax), d))
        struct = ir.LiteralStructType([x.type for _, x in captured] or [I64])
        closure = alloca(ir.IRBuilder(self.entry), struct, align=8, name="closure")
        for k, (_, x) in enumerate(captured):
            b.store(x, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=struct))

        wname = self.mod.new_worker_name(self.symbol)
        bfn = ir.Function(self.m, ir.FunctionType(VOID, [x.type for _, x in captured] + [I64, I64]),
                          wname + ".body")
        bfn.linkage = "internal"
        w = FuncCodegen(self.mod, self.func_op, self.sig, in_parallel=True, symbol=self.symbol)
        w._open(bfn)
        w.values.update(constants)
        for arg, (key, x) in zip(bfn.args, captured):
            if isinstance(key, tuple):
                arg.name = f"{key[0].name or 'buf'}_dim{key[1]}"
                w.dims[key[0]][key[1]] = arg
                continue
            arg.name = key.name or "v"
            w.values[key] = arg
            if key in self.dims:
                arg.add_attribute("noalias")
                w.dims[key] = list(self.dims[key])
        lo, hi = bfn.args[-2], bfn.args[-1]
        lo.name, hi.name = "lo", "hi"
        w.loop(lo, hi, op.induction_var, lambda: w.block(op.body))
        w._close()

        wfn = ir.Function(self.m, WORKER_TYPE, wname)
        wfn.linkage = "internal"
        wfn.args[0].name, wfn.args[1].name, wfn.args[2].name = "closure", "lo", "hi"
        wb = ir.IRBuilder(wfn.append_basic_block("entry"))
        fields = [wb.load(wb.gep(wfn.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=struct),
                          typ=x.type) for k, (_, x) in enumerate(captured)]
        wb.call(bfn, fields + [wfn.args[1], wfn.args[2]])
        wb.ret_void()

        b.call(parallel_for(self.m), [wfn, closure, self.bound(op.lower), self.bound(op.upper)])

    def op_tir_if(self, op):
        b = self.b
        cond = self.v(op.operands[0])
        if op.else_block is None:
            with b.if_then(cond):
                self.block(op.then_block)
        else:
            with b.if_else(cond) as (then, otherwise):
                with then:
                    self.block(op.then_block)
                with otherwise:
                    self.block(op.else_block)

    def op_tir_intrin(self, op):
        users = op.results[0].users
        if len(users) == 1 and isinstance(users[0], A.ArithOp) and self.fused_dot(users[0]) is not None:
            return   # its add emits the dot instruction
        args = [self.v(x) for x in op.operands]
        self.values[op.results[0]] = emit_intrinsic(self.m, self.b, op.attributes["intrin"], args)

    def op_tir_barrier(self, op):
        pass   # no GPU threads on a CPU: nothing to wait for

    def op_tir_prefetch(self, op):
        """llvm.prefetch(ptr, read, locality 2: into L2, data).  The address is
        a plain getelementptr: its indices may pass a dimension (tir.prefetch),
        which inbounds would make undefined."""
        buf, *idx = op.operands
        ptr = self.address(buf, idx, inbounds=False)
        fn = declare(self.m, "llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
        self.b.call(fn, [ptr, ir.Constant(I32, 0), ir.Constant(I32, PREFETCH_LOCALITY), ir.Constant(I32, 1)])

    def op_tir_broadcast(self, op):
        # insertelement into lane 0, then a zero shuffle mask: LLVM's splat idiom
        vt = llvm_type(op.results[0].type)
        undef = ir.Constant(vt, ir.Undefined)
        one = self.b.insert_element(undef, self.v(op.operands[0]), ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, vt.count), [ir.Constant(I32, 0)] * vt.count)
        self.values[op.results[0]] = self.b.shuffle_vector(one, undef, mask)


# op class -> the FuncCodegen method that compiles it (other arith ops go
# through FuncCodegen.arith)
_HANDLERS = {
    A.ConstantOp: FuncCodegen.op_arith_constant,
    tir.LoadOp: FuncCodegen.op_tir_load,
    tir.StoreOp: FuncCodegen.op_tir_store,
    tir.AllocOp: FuncCodegen.op_tir_alloc,
    tir.ForOp: FuncCodegen.op_tir_for,
    tir.IfOp: FuncCodegen.op_tir_if,
    tir.IntrinOp: FuncCodegen.op_tir_intrin,
    tir.BarrierOp: FuncCodegen.op_tir_barrier,
    tir.PrefetchOp: FuncCodegen.op_tir_prefetch,
    tir.BroadcastOp: FuncCodegen.op_tir_broadcast,
}


def generate(funcs, triple=None, data_layout=None, manifest=False, name="tvmd", dot_lanes=None):
    """An llvmlite ir.Module for `funcs` (tir.func ops); with `manifest`, the
    JSON signature table an object file needs to be loaded back.
    `dot_lanes`: per dot intrinsic, the widths of its instruction the
    target CPU has (VectorUnit.dot_lanes)."""
    cg = ModuleCodegen(name, triple, data_layout, dot_lanes)
    for f in funcs:
        cg.add_func(f)
    if manifest:
        cg.add_manifest()
    return cg.module, cg.signatures


def tir_funcs(module_op):
    """The tir.funcs of a module (or a single tir.func), in order."""
    if isinstance(module_op, tir.FuncOp):
        return [module_op]
    return [op for op in module_op.body.ops if isinstance(op, tir.FuncOp)]
