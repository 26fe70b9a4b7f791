"""tir → CUDA C, one ``__global__`` kernel per tir.func.

    // launch @matmul: grid=(16, 16, 1) block=(16, 16, 1)
    extern "C" __global__ void __launch_bounds__(256) matmul(float* __restrict__ A, ...) { ... }

Conventions:

* Parameters follow :mod:`tvmd.backend.abi`: buffers are ``T* __restrict__``
  to the first element, ``index`` is ``long long``, hidden ``long long``
  dynamic dimensions come last.
* A loop bound to ``blockIdx.*`` / ``threadIdx.*`` is not a loop: its
  induction variable is the built-in index plus the lower bound.  The grid
  and block extents are the loops' extents (an integer, or the name of the
  ``index`` argument the extent is).  When one tag is bound by several loops
  with different static extents, the launch uses the largest and the smaller
  loops are guarded with ``if (threadIdx.x < extent)``.  The extents are
  written as a comment above each kernel and returned as :class:`KernelInfo`
  so a launcher knows them.  ``__launch_bounds__`` is the block size when it
  is static.  ``vthread`` loops stay loops.
* Other loops are C ``for`` loops; ``unrolled`` adds ``#pragma unroll``.
* ``tir.alloc``: scope ``shared`` → ``__shared__ T name[N]``; ``local`` (or
  global, which a kernel cannot allocate) → a per-thread array.
* ``tir.barrier`` → ``__syncthreads()``; ``tir.intrin`` → CUDA's math
  functions (``expf``, ``tanhf``, ``rintf`` for round, ...); floordiv,
  floormod and NaN-propagating max/min are small device helpers.
* Every SSA value becomes a ``const`` local named after its tir name.
* ``vector<N>`` values (tir-vectorize) are N lanes, one local each.  A
  vector load or store of f32 (i32) whose start is provably a multiple of
  4 elements in a buffer whose rows are too (so the address is 16-byte
  aligned) moves 4 lanes at once as a ``float4`` (``int4``)::

      const float4 a_0 = *reinterpret_cast<const float4*>(&A[((i * 16LL) + j)]);
      *reinterpret_cast<float4*>(&C[((i * 16LL) + j)]) = make_float4(s_0, s_1, s_2, s_3);

  otherwise lane by lane.  Shared and local buffers accessed so get
  ``__align__(16)``; global buffers come 256-byte aligned from cudaMalloc.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dialects.arith import ops as A
from ...dialects.tir import ops as tir
from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from .. import abi
from ..names import c_ident, comment_text, unique, unique_c_idents

_C_TYPES = {
    "index": "long long", "i64": "long long", "i32": "int", "i16": "short", "i8": "signed char",
    "i1": "bool", "ui64": "unsigned long long", "ui32": "unsigned int", "ui16": "unsigned short",
    "ui8": "unsigned char", "f64": "double", "f32": "float", "f16": "half", "bf16": "nv_bfloat16",
}
_UNSIGNED = {"long long": "unsigned long long", "int": "unsigned int", "short": "unsigned short",
             "signed char": "unsigned char", "bool": "bool"}

PRELUDE = """\
template <typename T> __device__ __forceinline__ T tvmd_floordiv(T a, T b) {
  T q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T tvmd_floormod(T a, T b) {
  T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// NaN-propagating max/min (numpy's maximum/minimum; fmaxf drops NaNs)
template <typename T> __device__ __forceinline__ T tvmd_max(T a, T b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
template <typename T> __device__ __forceinline__ T tvmd_min(T a, T b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
// arith.maximumf/minimumf: NaN propagates and -0.0 < +0.0 (llvm.maximum/minimum); equal
// operands differ only for zeros of two signs, where a + b is +0 and -(-a + -b) is -0
template <typename T> __device__ __forceinline__ T tvmd_fmax(T a, T b) {
  return (a != a || b != b) ? a + b : a == b ? (a == T(0) ? a + b : a) : (a > b ? a : b);
}
template <typename T> __device__ __forceinline__ T tvmd_fmin(T a, T b) {
  return (a != a || b != b) ? a + b : a == b ? (a == T(0) ? -(-a + -b) : a) : (a < b ? a : b);
}
// numpy's shifts: the amount read as unsigned; at least the bit width (a negative
// amount included) gives 0 (left) or the sign fill (right), where C's are undefined
template <typename T> __device__ __forceinline__ T tvmd_shl(T a, T n) {
  return (unsigned long long)n >= sizeof(T) * 8 ? (T)0 : (T)((unsigned long long)a << n);
}
template <typename T> __device__ __forceinline__ T tvmd_shr(T a, T n) {
  return (unsigned long long)n >= sizeof(T) * 8 ? (T)(a < 0 ? -1 : 0) : (T)(a >> n);
}
"""

_MATH = {  # tir intrinsic -> (float, double) function
    "exp": ("expf", "exp"), "log": ("logf", "log"), "sqrt": ("sqrtf", "sqrt"), "rsqrt": ("rsqrtf", "rsqrt"),
    "tanh": ("tanhf", "tanh"), "erf": ("erff", "erf"), "fabs": ("fabsf", "fabs"), "floor": ("floorf", "floor"),
    "ceil": ("ceilf", "ceil"), "round": ("rintf", "rint"), "trunc": ("truncf", "trunc"), "sin": ("sinf", "sin"),
    "cos": ("cosf", "cos"), "pow": ("powf", "pow"), "fma": ("fmaf", "fma"),
    "log2": ("log2f", "log2"), "log10": ("log10f", "log10"), "tan": ("tanf", "tan"), "asin": ("asinf", "asin"),
    "acos": ("acosf", "acos"), "atan": ("atanf", "atan"), "sinh": ("sinhf", "sinh"), "cosh": ("coshf", "cosh"),
    "asinh": ("asinhf", "asinh"), "acosh": ("acoshf", "acosh"), "atanh": ("atanhf", "atanh"),
}
_BINARY = {A.AddIOp: "+", A.SubIOp: "-", A.MulIOp: "*", A.DivSIOp: "/", A.RemSIOp: "%",
           A.DivUIOp: "/", A.RemUIOp: "%",
           A.AndIOp: "&", A.OrIOp: "|", A.XOrIOp: "^",
           A.AddFOp: "+", A.SubFOp: "-", A.MulFOp: "*", A.DivFOp: "/"}
_CALL2 = {A.FloorDivSIOp: "tvmd_floordiv", A.FloorModSIOp: "tvmd_floormod",
          A.MaxSIOp: "tvmd_max", A.MinSIOp: "tvmd_min", A.MaxUIOp: "tvmd_max", A.MinUIOp: "tvmd_min",
          A.MaximumFOp: "tvmd_fmax",
          A.MinimumFOp: "tvmd_fmin", A.ShLIOp: "tvmd_shl", A.ShRSIOp: "tvmd_shr",
          A.ShRUIOp: "tvmd_shr"}
# i1 arithmetic is modulo 2: add and sub are xor, mul is and; shli by 1 clears
# the bit, shrsi fills with the bit itself (true is -1)
_BOOL_BINARY = {A.AddIOp: "({0} != {1})", A.SubIOp: "({0} != {1})", A.MulIOp: "({0} && {1})",
                A.ShLIOp: "({0} && !{1})", A.ShRSIOp: "({0})",
                A.ShRUIOp: "({0} && !{1})"}
# ops that read their operands' bits as signed (dialects/arith/semantics.py):
# on i1 and uiN, whose C types are bool and unsigned, C would read them unsigned
_READS_SIGNED = (A.DivSIOp, A.RemSIOp, A.FloorDivSIOp, A.FloorModSIOp, A.MaxSIOp, A.MinSIOp, A.ShRSIOp)
_SIGNED = {u: s for s, u in _UNSIGNED.items() if s != "bool"}
# and the ones that read them as unsigned: on signed C types C would read them signed
_READS_UNSIGNED = (A.DivUIOp, A.RemUIOp, A.MaxUIOp, A.MinUIOp, A.ShRUIOp)
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
THREAD_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass
class KernelInfo:
    """What a launcher needs: the kernel's name, launch extents and ABI.
    grid/block entries are ints or the name of an ``index`` argument."""
    name: str
    grid: tuple
    block: tuple
    signature: abi.Signature
    shared_bytes: int = 0
    symbol: str = ""       # the C name (backend.names: the tir name made a distinct C identifier)

    def resolve(self, scalars: dict):
        """(grid, block) as ints, argument names replaced by their values."""
        def r(x):
            return int(scalars[x]) if isinstance(x, str) else int(x)
        return tuple(r(x) for x in self.grid), tuple(r(x) for x in self.block)


def _binary(cls, a) -> str:
    """Binary op `cls` on operand expressions `a`: an operator or a prelude call."""
    return f"{_CALL2[cls]}({a[0]}, {a[1]})" if cls in _CALL2 else f"({a[0]} {_BINARY[cls]} {a[1]})"


def c_type(t) -> str:
    if isinstance(t, T.VectorType):
        raise TypeError("vector")
    name = _C_TYPES.get(str(t))
    if name is None:
        raise TypeError(str(t))
    return name


def float_literal(v: float, t) -> str:
    """An exact C literal for a float constant of type t."""
    if str(t) == "f64":
        if np.isnan(v):
            return "__longlong_as_double(0x7ff8000000000000LL)"
        if np.isinf(v):
            return ("-" if v < 0 else "") + "__longlong_as_double(0x7ff0000000000000LL)"
        return repr(float(v))
    f = np.float32(v)
    if np.isnan(f):
        return "__int_as_float(0x7fc00000)"
    if np.isinf(f):
        return ("-" if f < 0 else "") + "__int_as_float(0x7f800000)"
    s = str(f)   # shortest text that reads back to the same float32
    if not any(c in s for c in ".en"):
        s += ".0"
    lit = s + "f"
    if str(t) == "f16":
        return f"__float2half({lit})"
    if str(t) == "bf16":
        return f"__float2bfloat16({lit})"
    return lit


class _Writer:
    def __init__(self):
        self.lines = []
        self.depth = 0

    def line(self, s):
        self.lines.append("  " * self.depth + s)

    def open(self, s):
        self.line(s + " {")
        self.depth += 1

    def close(self, tail=""):
        self.depth -= 1
        self.line("}" + tail)


class KernelCodegen:
    def __init__(self, func_op, target_arch="sm_90", symbol=None):
        self.f = func_op
        self.symbol = symbol or unique_c_idents([func_op.sym_name])[func_op.sym_name]
        self.arch = target_arch
        self.sig = abi.signature(func_op)
        self.names: dict = {}      # Value -> C expression (a name or a literal)
        self.taken: set = set()
        self.dims: dict = {}       # buffer Value -> [int | C name] per dimension
        self.w = _Writer()
        self.uses_half = False
        self.launch = {}           # tag -> extent (int or arg name)
        self.guarded = {}          # ForOp -> needs a guard
        self.shared_bytes = 0
        self.lanes_of: dict = {}   # vector Value -> [C expression per lane]
        self.vector_bufs = {op.operands[0 if isinstance(op, tir.LoadOp) else 1] for op in func_op.walk()
                            if isinstance(op, (tir.LoadOp, tir.StoreOp))
                            and isinstance((op.results[0] if isinstance(op, tir.LoadOp) else op.operands[0]).type,
                                           T.VectorType)}

    def error(self, op, msg):
        return DiagnosticError(op.loc, f"'{op.name}' op {msg}")

    def fresh(self, hint, fallback="v"):
        return unique(c_ident(hint, fallback), self.taken)

    def ctype(self, op, t):
        if isinstance(t, T.VectorType):
            if t.rank != 1:
                raise self.error(op, f"has type {t}; the CUDA backend takes 1-d vectors only")
            t = t.element_type
        try:
            ct = c_type(t)
        except TypeError:
            raise self.error(op, f"has type {t}, which the CUDA backend does not support") from None
        if ct in ("half", "nv_bfloat16"):
            self.uses_half = True
        return ct

    # -- launch configuration --------------------------------------------------

    def plan_launch(self):
        """Grid and block extents per thread tag, from the bound loops."""
        by_tag: dict = {}
        for op in self.f.walk(include_self=False):
            if isinstance(op, tir.ForOp) and op.kind == "thread" and op.attributes.get("thread") in THREAD_AXES:
                by_tag.setdefault(op.attributes["thread"], []).append((op, self.extent(op)))
        for tag, loops in by_tag.items():
            exts = {e for _, e in loops}
            if len(exts) == 1:
                self.launch[tag] = exts.pop()
                continue
            if any(isinstance(e, str) for e in exts):
                raise self.error(loops[0][0], f"binds {tag} with different extents, some dynamic "
                                              f"({', '.join(map(str, exts))}); the launch needs one")
            self.launch[tag] = max(exts)
            for op, e in loops:
                if e != self.launch[tag]:
                    self.guarded[op] = e

    def extent(self, op):
        lo, hi = op.lower, op.upper
        if isinstance(lo, int) and isinstance(hi, int):
            return max(hi - lo, 0)
        from ...ir.core import BlockArgument
        if not isinstance(lo, int):
            raise self.error(op, "a thread-bound loop needs a static lower bound")
        if isinstance(hi, BlockArgument) and hi.block is self.f.body:
            name = self.sig.params[hi.index].name
            return name if lo == 0 else f"{name} - {lo}"
        raise self.error(op, "the extent of a thread-bound loop must be a constant or an index "
                             "argument of the function")

    def grid_block(self):
        def axes(prefix):
            return tuple(self.launch.get(f"{prefix}.{a}", 1) for a in "xyz")
        return axes("blockIdx"), axes("threadIdx")

    # -- emission ------------------------------------------------------------------

    def emit(self):
        f = self.f
        self.plan_launch()
        params = []
        for p, arg in zip(self.sig.params, list(f.args) + [None] * len(self.sig.params)):
            name = self.fresh(p.name, "arg")
            if p.kind == "buffer":
                params.append(f"{self.ctype(f, arg.type.element_type)}* __restrict__ {name}")
                self.names[arg] = name
                self.dims[arg] = list(arg.type.shape)
            elif p.kind == "scalar":
                params.append(f"{self.ctype(f, arg.type)} {name}")
                self.names[arg] = name
            else:
                params.append(f"long long {name}")
                self.dims[f.args[p.buffer]][p.axis] = name
        grid, block = self.grid_block()
        bounds = ""
        if all(isinstance(x, int) for x in block):
            bounds = f"__launch_bounds__({block[0] * block[1] * block[2]}) "
        self.w.line(f"// launch @{comment_text(f.sym_name)}: grid=({', '.join(map(str, grid))}) "
                    f"block=({', '.join(map(str, block))})")
        self.w.open(f'extern "C" __global__ void {bounds}{self.symbol}({", ".join(params)})')
        self.block(f.body)
        self.w.close()
        return KernelInfo(f.sym_name, grid, block, self.sig, self.shared_bytes, self.symbol)

    def block(self, block):
        for op in block.ops:
            h = _HANDLERS.get(type(op))
            if h is not None:
                h(self, op)
            elif isinstance(op, A.ArithOp):
                self.arith(op)
            else:
                raise self.error(op, "cannot be compiled to CUDA")

    def n(self, v):
        return self.names[v]

    def define(self, op, expr):
        r = op.results[0]
        name = self.fresh(r.name)
        self.w.line(f"const {self.ctype(op, r.type)} {name} = {expr};")
        self.names[r] = name

    # arith -----------------------------------------------------------------------

    def op_arith_constant(self, op):
        t = op.results[0].type
        v = op.attributes["value"]
        self.ctype(op, t)
        if isinstance(t, T.VectorType):
            vals = np.asarray(getattr(v, "array", v)).reshape(-1)
            n = t.shape[0]
            if vals.size not in (1, n):
                raise self.error(op, f"has a {t} constant of {vals.size} values")
            lanes = [self.scalar_literal(vals[k if vals.size > 1 else 0].item(), t.element_type)
                     for k in range(n)]
            self.lanes_of[op.results[0]] = lanes
            return
        self.names[op.results[0]] = self.scalar_literal(v, t)

    def scalar_literal(self, v, t):
        if t is T.i1:
            lit = "true" if v else "false"
        elif T.is_float(t):
            lit = float_literal(v, t)
        else:
            ct = c_type(t)
            lit = str(int(v)) + ("LL" if ct == "long long" else "ULL" if ct == "unsigned long long"
                                 else "U" if ct.startswith("unsigned") else "")
            if ct not in ("long long", "int", "unsigned long long", "unsigned int"):
                lit = f"(({ct}){lit})"
        return lit

    def arith(self, op):
        t = op.results[0].type
        if isinstance(t, T.VectorType) or any(isinstance(x.type, T.VectorType) for x in op.operands):
            n = self.vector_width(op)
            lanes = []
            for k in range(n):
                a = [self.lane(x, k) for x in op.operands]
                lanes.append(self.define_lane(op, k, self.arith_expr(op, a, T.element_type(t))))
            self.lanes_of[op.results[0]] = lanes
            return
        self.define(op, self.arith_expr(op, [self.n(x) for x in op.operands], t))

    def arith_expr(self, op, a, t):
        """The C expression of scalar arith op `op` on operand expressions `a`."""
        cls = type(op)
        et = T.element_type(op.operands[0].type) if op.operands else t
        if et is T.i1 and cls in _BOOL_BINARY:
            return _BOOL_BINARY[cls].format(*a)
        if (cls in _READS_SIGNED or (cls is A.CmpIOp and op.attributes["predicate"][0] == "s")) \
                and (et is T.i1 or c_type(et) in _SIGNED):
            # read the bits as signed: i1 true is -1, a uiN is its signed C type
            a = [f"(-(int){x})" if et is T.i1 else f"(({_SIGNED[c_type(et)]}){x})" for x in a]
            if cls is A.CmpIOp:
                return f"({a[0]} {_CMP[op.attributes['predicate'][-2:]]} {a[1]})"
            return f"((bool)(({_binary(cls, a)}) & 1))" if et is T.i1 else f"(({c_type(et)}){_binary(cls, a)})"
        if cls in _READS_UNSIGNED and et is not T.i1 and c_type(et) in _UNSIGNED:
            # read the bits as unsigned: an iN is its unsigned C type
            a = [f"(({_UNSIGNED[c_type(et)]}){x})" for x in a]
            return f"(({c_type(et)}){_binary(cls, a)})"
        if cls in _BINARY or cls in _CALL2:
            expr = _binary(cls, a)
        elif cls is A.RemFOp:
            expr = f"{'fmod' if str(t) == 'f64' else 'fmodf'}({a[0]}, {a[1]})"
        elif cls is A.PowFOp:
            expr = f"{'pow' if str(t) == 'f64' else 'powf'}({a[0]}, {a[1]})"
        elif cls is A.NegFOp:
            expr = f"(-{a[0]})"
        elif cls is A.CmpIOp:
            pred = op.attributes["predicate"]
            cmp = _CMP[pred[-2:]]
            if pred[0] == "u":
                ct0 = c_type(T.element_type(op.operands[0].type))
                ut = _UNSIGNED.get(ct0, ct0)
                expr = f"(({ut}){a[0]} {cmp} ({ut}){a[1]})"
            else:
                expr = f"({a[0]} {cmp} {a[1]})"
        elif cls is A.CmpFOp:
            pred = op.attributes["predicate"]
            if pred == "one":
                expr = f"({a[0]} < {a[1]} || {a[0]} > {a[1]})"
            elif pred == "ueq":
                expr = f"(!({a[0]} < {a[1]} || {a[0]} > {a[1]}))"
            elif pred == "une":
                expr = f"({a[0]} != {a[1]})"
            elif pred[0] == "o":
                expr = f"({a[0]} {_CMP[pred[1:]]} {a[1]})"
            else:   # unordered: true when either is NaN
                expr = f"(!({a[0]} {_NEGATED[_CMP[pred[1:]]]} {a[1]}))"
        elif cls is A.SelectOp:
            expr = f"({a[0]} ? {a[1]} : {a[2]})"
        elif isinstance(op, A.CastOp):
            src = T.element_type(op.operands[0].type)
            x = a[0]
            if cls in (A.UIToFPOp, A.ExtUIOp) and not getattr(src, "unsigned", False) and src is not T.i1:
                x = f"(({_UNSIGNED.get(c_type(src), c_type(src))}){x})"
            if cls is A.FPToUIOp and t is not T.i1 and not getattr(t, "unsigned", False):
                # through the unsigned type: 3.5e9 -> i32 is the bits of 3500000000u,
                # where a float-to-int cast out of int's range is undefined in C
                x = f"(({_UNSIGNED.get(c_type(t), c_type(t))}){x})"
            if t is T.i1 and T.is_int(src):   # narrowing to i1 keeps the lowest bit, not x != 0
                x = f"(({x}) & 1)"
            expr = f"(({self.ctype(op, t)}){x})"
        else:
            raise self.error(op, "cannot be compiled to CUDA")
        return expr

    # vectors ---------------------------------------------------------------------

    def vector_width(self, op):
        for v in list(op.results) + list(op.operands):
            if isinstance(v.type, T.VectorType):
                return v.type.shape[0]
        raise AssertionError(op.name)

    def lane(self, v, k):
        lanes = self.lanes_of.get(v)
        return lanes[k] if lanes is not None else self.n(v)   # a scalar operand: the same in every lane

    def define_lane(self, op, k, expr):
        r = op.results[0]
        name = self.fresh(f"{r.name or 'v'}_{k}")
        self.w.line(f"const {self.ctype(op, r.type)} {name} = {expr};")
        return name

    def op_tir_broadcast(self, op):
        self.ctype(op, op.results[0].type)
        self.lanes_of[op.results[0]] = [self.n(op.operands[0])] * op.results[0].type.shape[0]

    def quad(self, buf, indices, et):
        """The CUDA 4-vector type when a vector access of `buf` at `indices`
        starts on a 16-byte boundary, else None."""
        vt = {"f32": "float4", "i32": "int4"}.get(str(et))
        if vt is None:
            return None
        dims = self.dims[buf]
        if not (isinstance(dims[-1], int) and dims[-1] % 4 == 0) and len(dims) > 1:
            return None
        return vt if _multiple_of(indices[-1], 4) else None

    def vector_load(self, op, buf, idx, vt):
        n = vt.shape[0]
        lin = self.index(buf, idx)
        quad = self.quad(buf, idx, vt.element_type) if n % 4 == 0 else None
        r = op.results[0]
        lanes = []
        if quad:
            for q in range(n // 4):
                name = self.fresh(f"{r.name or 'v'}_{q}")
                off = f" + {4 * q}" if q else ""
                self.w.line(f"const {quad} {name} = *reinterpret_cast<const {quad}*>(&{self.n(buf)}[{lin}{off}]);")
                lanes += [f"{name}.{c}" for c in "xyzw"]
        else:
            for k in range(n):
                off = f" + {k}" if k else ""
                lanes.append(self.define_lane(op, k, f"{self.n(buf)}[{lin}{off}]"))
        self.lanes_of[r] = lanes

    def vector_store(self, op, val, buf, idx):
        n = val.type.shape[0]
        lin = self.index(buf, idx)
        quad = self.quad(buf, idx, val.type.element_type) if n % 4 == 0 else None
        lanes = [self.lane(val, k) for k in range(n)]
        if quad:
            for q in range(n // 4):
                off = f" + {4 * q}" if q else ""
                self.w.line(f"*reinterpret_cast<{quad}*>(&{self.n(buf)}[{lin}{off}]) = "
                            f"make_{quad}({', '.join(lanes[4 * q:4 * q + 4])});")
        else:
            for k in range(n):
                off = f" + {k}" if k else ""
                self.w.line(f"{self.n(buf)}[{lin}{off}] = {lanes[k]};")

    # memory ------------------------------------------------------------------------

    def index(self, buf, indices):
        dims = self.dims[buf]
        idx = [self.n(i) for i in indices]
        lin = idx[0] if idx else "0"
        for d, i in zip(dims[1:], idx[1:]):
            lin = f"(({lin} * {d if isinstance(d, str) else str(d) + 'LL'}) + {i})"
        return lin

    def op_tir_load(self, op):
        buf, *idx = op.operands
        self.ctype(op, op.results[0].type)
        if isinstance(op.results[0].type, T.VectorType):
            return self.vector_load(op, buf, idx, op.results[0].type)
        self.define(op, f"{self.n(buf)}[{self.index(buf, idx)}]")

    def op_tir_store(self, op):
        val, buf, *idx = op.operands
        self.ctype(op, val.type)
        if isinstance(val.type, T.VectorType):
            return self.vector_store(op, val, buf, idx)
        self.w.line(f"{self.n(buf)}[{self.index(buf, idx)}] = {self.n(val)};")

    def op_tir_alloc(self, op):
        r = op.results[0]
        t = r.type
        ct = self.ctype(op, t.element_type)
        name = self.fresh(r.name, "buf")
        if not t.is_static:
            raise op.error(f"a CUDA kernel allocates static buffers only, got {t}")
        n = t.num_elements()
        align = "__align__(16) " if r in self.vector_bufs else ""
        if t.scope == "shared":
            self.w.line(f"__shared__ {align}{ct} {name}[{n}];")
            self.shared_bytes += n * (8 if t.element_type is T.index else max(t.element_type.bitwidth // 8, 1))
        else:
            self.w.line(f"{align}{ct} {name}[{n}];")
        self.names[r] = name
        self.dims[r] = list(t.shape)

    # control flow ----------------------------------------------------------------

    def bound(self, b):
        return f"{b}LL" if isinstance(b, int) else self.n(b)

    def op_tir_for(self, op):
        iv = self.fresh(op.induction_var.name, "i")
        self.names[op.induction_var] = iv
        tag = op.attributes.get("thread")
        if op.kind == "thread" and tag in THREAD_AXES:
            lo = op.lower
            self.w.open(f"/* {tag} */")
            start = f"((long long){tag})" if lo == 0 else f"((long long){tag} + {self.bound(lo)})"
            self.w.line(f"const long long {iv} = {start};")
            if op in self.guarded:
                self.w.open(f"if ({tag} < {self.guarded[op]})")
                self.block(op.body)
                self.w.close()
            else:
                self.block(op.body)
            self.w.close()
            return
        if op.kind == "unrolled":
            self.w.line("#pragma unroll")
        self.w.open(f"for (long long {iv} = {self.bound(op.lower)}; {iv} < {self.bound(op.upper)}; ++{iv})")
        self.block(op.body)
        self.w.close()

    def op_tir_if(self, op):
        self.w.open(f"if ({self.n(op.operands[0])})")
        self.block(op.then_block)
        if op.else_block is not None:
            self.w.depth -= 1
            self.w.line("} else {")
            self.w.depth += 1
            self.block(op.else_block)
        self.w.close()

    def op_tir_barrier(self, op):
        self.w.line("__syncthreads();")

    def op_tir_prefetch(self, op):
        pass   # a CPU cache hint; the GPU kernels stage through shared memory instead

    def op_tir_intrin(self, op):
        t = op.results[0].type
        if isinstance(t, T.VectorType):
            self.lanes_of[op.results[0]] = [
                self.define_lane(op, k, self.intrin_expr(op, [self.lane(x, k) for x in op.operands]))
                for k in range(t.shape[0])]
            return
        self.define(op, self.intrin_expr(op, [self.n(x) for x in op.operands]))

    def intrin_expr(self, op, args):
        name = op.attributes["intrin"]
        ct = self.ctype(op, op.results[0].type)
        low = ct in ("half", "nv_bfloat16")
        if low:   # half precision computes in float
            conv = "__half2float" if ct == "half" else "__bfloat162float"
            args = [f"{conv}({a})" for a in args]
        dbl = ct == "double"
        if name == "sigmoid":
            one = "1.0" if dbl else "1.0f"
            expr = f"({one} / ({one} + {'exp' if dbl else 'expf'}(-{args[0]})))"
        else:
            expr = f"{_MATH[name][1 if dbl else 0]}({', '.join(args)})"
        if low:
            expr = f"{'__float2half' if ct == 'half' else '__float2bfloat16'}({expr})"
        return expr


# op class -> the KernelCodegen method that emits it (other arith ops go
# through KernelCodegen.arith)
_HANDLERS = {
    A.ConstantOp: KernelCodegen.op_arith_constant,
    tir.BroadcastOp: KernelCodegen.op_tir_broadcast,
    tir.LoadOp: KernelCodegen.op_tir_load,
    tir.StoreOp: KernelCodegen.op_tir_store,
    tir.AllocOp: KernelCodegen.op_tir_alloc,
    tir.ForOp: KernelCodegen.op_tir_for,
    tir.IfOp: KernelCodegen.op_tir_if,
    tir.BarrierOp: KernelCodegen.op_tir_barrier,
    tir.PrefetchOp: KernelCodegen.op_tir_prefetch,
    tir.IntrinOp: KernelCodegen.op_tir_intrin,
}


def _multiple_of(v, m, depth=0):
    """Is the index value `v` provably a multiple of `m`?  (Constants,
    products with a multiple, sums and differences of multiples.)"""
    d = v.defining_op()
    if d is None or depth > 32:
        return False
    if isinstance(d, A.ConstantOp):
        return d.attributes["value"] % m == 0
    if isinstance(d, A.MulIOp):
        return any(_multiple_of(x, m, depth + 1) for x in d.operands)
    if isinstance(d, (A.AddIOp, A.SubIOp)):
        return all(_multiple_of(x, m, depth + 1) for x in d.operands)
    return False


def prepare(module_op):
    """A copy of the module ready for CUDA codegen: host and device split
    (tir-split-host-device) and block barriers in (tir-thread-sync), the
    passes TVM's build runs before its CUDA codegen.  Both leave alone what
    was already split or synchronised."""
    from ...dialects.tir.passes.split_host_device import split_function
    from ...dialects.tir.passes.thread_sync import sync_function
    from ..llvm.codegen import tir_funcs
    m = module_op.clone()
    if isinstance(m, tir.FuncOp):
        return m
    for f in tir_funcs(m):
        split_function(f)
    for f in tir_funcs(m):
        sync_function(f)
    return m


def is_host(func_op):
    """A host function: it launches kernels (tir.launch) instead of being one."""
    return any(isinstance(op, tir.LaunchOp) for op in func_op.walk(include_self=False))


def generate(module_op, target=None):
    """(CUDA source, [KernelInfo]) for every device kernel of `module_op`
    (every tir.func, after :func:`prepare`; host functions, which only
    launch kernels, are listed in a comment and run by the launcher)."""
    from ..llvm.codegen import tir_funcs
    arch = getattr(target, "arch", None) or "sm_90"
    kernels, bodies, half = [], [], False
    hosts = []
    funcs = tir_funcs(prepare(module_op))
    symbols = unique_c_idents([f.sym_name for f in funcs if not is_host(f)])
    for f in funcs:
        if is_host(f):
            seq = [op.callee for op in f.walk(include_self=False) if isinstance(op, tir.LaunchOp)]
            hosts.append(f"// host @{comment_text(f.sym_name)}: launches "
                         f"{', '.join('@' + comment_text(c) for c in seq)}")
            continue
        kc = KernelCodegen(f, arch, symbols[f.sym_name])
        kernels.append(kc.emit())
        bodies.append("\n".join(kc.w.lines))
        half |= kc.uses_half
    head = [f"// Generated by tvmd for CUDA {arch}.", "// tvm-translate --emit=cuda; compile with: "
            f"nvcc -arch={arch} -cubin kernels.cu"] + hosts
    if half:
        head += ["#include <cuda_fp16.h>", "#include <cuda_bf16.h>"]
    return "\n".join(head) + "\n\n" + PRELUDE + "\n" + "\n\n".join(bodies) + "\n", kernels
