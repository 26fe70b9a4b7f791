"""``tvmd.te``: classic TVM's tensor-expression API, emitting the te dialect.

    from tvmd import te
    A = te.placeholder((n, k), name="A")                 # a te.func parameter
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)                         # schedule.py

What maps to what:

* ``te.placeholder(shape, dtype, name)`` -> a parameter ``%name: tensor<...>``
  of the emitted ``te.func``.
* ``te.compute(shape, fcompute, name)`` -> ``%name = te.compute [%i, %j] :
  tensor<...> { ... yield %v }``; the axes are named after fcompute's
  parameters (as TVM does); the tensor's dtype is the body's.
* ``te.sum / te.max / te.min(e, axis=k)`` -> ``reduce [%k: N] "sum"`` (the
  whole body of a compute, as TVM requires); ``where=`` selects the
  identity where the condition fails.  With two expressions instead of an
  axis, ``te.max(a, b)`` is the elementwise maximum (``tvm.tir.max``).
* ``te.comm_reducer(fcombine, fidentity)`` -> a module-level ``te.reducer @name``.
* ``te.reduce_axis((lo, hi))`` -> a reduce axis of extent ``hi - lo``
  (the body sees ``k + lo``).
* ``te.exp / log / sqrt / tanh / sigmoid / ...`` -> ``te.intrin "exp"(...)``.
* ``te.if_then_else(c, a, b)`` -> ``arith.select``, reads in a branch guarded.

Shapes are Python ints (no symbolic sizes).  Not here: ``te.scan``,
``te.extern`` (the dialect's te.extern calls a tir.func, not a packed
function), ``te.var`` / ``te.size_var``, tuple (multi-output) computes and
reducers, tensor intrinsics.
"""

from __future__ import annotations

import builtins
import inspect
import types

from .expr import (Call, Const, Expr, Load, Reduce, Select, TVMError, Var, _check_dtype, binary,  # noqa: F401
                   const, convert, is_float, logical, walk)

__all__ = [
    "placeholder", "compute", "reduce_axis", "thread_axis", "create_schedule", "Tensor", "IterVar",
    "PlaceholderOp", "ComputeOp", "Schedule", "Stage", "sum", "max", "min", "comm_reducer", "const",
    "if_then_else", "all", "any", "exp", "log", "sqrt", "tanh", "sigmoid", "floordiv", "floormod",
    "TVMError",
]



# -- iteration variables ------------------------------------------------------------


class Range:
    """TVM's ``Range``: ``min`` and ``extent`` (ints)."""

    __slots__ = ("min", "extent")

    def __init__(self, lo, extent):
        self.min, self.extent = lo, extent

    def __repr__(self):
        return f"range(min={self.min}, ext={self.extent})"


class IterVar(Var):
    """An axis: a compute's spatial axis, a reduce axis, a thread axis, or a
    loop a schedule made (split, fuse, ...).  Usable in expressions as its
    variable (``A[i, k]``), as in TVM.  ``iter_type``: ``DataPar``,
    ``CommReduce`` or ``ThreadIndex``."""

    __slots__ = ("dom", "iter_type", "thread_tag", "root_op", "split_of")
    DataPar, ThreadIndex, CommReduce = 0, 1, 2

    def __init__(self, dom, name, iter_type=0, thread_tag=""):
        super().__init__(name, "int32")
        self.dom = dom
        self.iter_type = iter_type
        self.thread_tag = thread_tag
        self.root_op = None       # the compute whose root axis this is (te.axes of its stage)
        self.split_of = None      # the axis a split made this one from

    @property
    def var(self):
        return self

    @property
    def extent(self):
        return self.dom.extent if self.dom is not None else None

    def __repr__(self):
        kind = {0: "", 1: " thread", 2: " reduce"}[self.iter_type]
        return f"IterVar({self.name}{kind}, {self.dom})"


def _int(x, what):
    if isinstance(x, bool) or not (isinstance(x, int) or hasattr(x, "__index__")):
        raise TVMError(f"{what} must be an integer (symbolic sizes are not supported), got {x!r}")
    return int(x.__index__() if not isinstance(x, int) else x)


def _range(dom, what):
    if isinstance(dom, Range):
        return dom
    if not isinstance(dom, (tuple, list)) or len(dom) != 2:
        raise TVMError(f"{what} must be a (begin, end) pair, got {dom!r}")
    lo, hi = _int(dom[0], what), _int(dom[1], what)
    if hi <= lo:
        raise TVMError(f"{what} ({lo}, {hi}) is empty")
    return Range(lo, hi - lo)


def reduce_axis(dom, name="rv", thread_tag=""):
    """``te.reduce_axis((lo, hi), name)``: a reduction axis over [lo, hi)."""
    return IterVar(_range(dom, "reduce_axis dom"), name, IterVar.CommReduce, thread_tag)


def thread_axis(dom=None, tag="", name=""):
    """``te.thread_axis("threadIdx.x")`` or ``te.thread_axis((0, n), "threadIdx.x")``:
    what ``Stage.bind`` binds a loop to (``te.bind %x {thread = tag}``)."""
    if isinstance(dom, str):
        tag, dom = dom, None
    from ..dialects.te.schedule_ops import THREAD_TAGS
    if tag not in THREAD_TAGS and not tag.startswith("vthread"):
        raise TVMError(f"unknown thread tag '{tag}' (the te dialect binds {', '.join(THREAD_TAGS)})")
    return IterVar(_range(dom, "thread_axis dom") if dom is not None else None, name or tag,
                   IterVar.ThreadIndex, "vthread" if tag.startswith("vthread") else tag)


# -- tensors and operations ---------------------------------------------------------


class Operation:
    """Base of PlaceholderOp and ComputeOp (TVM's ``te.Operation``)."""

    num_outputs = 1

    def output(self, index):
        if index != 0:
            raise TVMError(f"{self.name} has one output, not {index + 1}")
        return self.tensor

    def __repr__(self):
        return f"{type(self).__name__}({self.name})"


class PlaceholderOp(Operation):
    def __init__(self, shape, dtype, name):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.input_tensors = []
        self.axis = []
        self.reduce_axis = []
        self.tensor = Tensor(self, shape, dtype)


class ComputeOp(Operation):
    """``body``: [the element expression] (a Reduce for a reduction);
    ``axis`` / ``reduce_axis``: IterVars; ``input_tensors``: tensors read."""

    def __init__(self, name, axis, reduce_axis, body, dtype, tag="", attrs=None, combiner=None, where=None):
        self.name = name
        self.axis = list(axis)
        self.reduce_axis = list(reduce_axis)
        self.body = [body]
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.combiner = combiner
        self.where = where
        self.dtype = dtype
        self.shape = tuple(a.dom.extent for a in self.axis)
        seen, ins = set(), []
        for x in walk(body):
            if isinstance(x, Load) and id(x.tensor) not in seen:
                seen.add(id(x.tensor))
                ins.append(x.tensor)
        self.input_tensors = ins
        self.tensor = Tensor(self, self.shape, dtype)
        self.source = None      # for a copy stage (cache_write's C): nothing to emit from body


class Tensor:
    """A tensor: ``.shape`` (ints), ``.dtype``, ``.name``, ``.op``; ``A[i, j]``
    reads an element."""

    def __init__(self, op, shape, dtype):
        self.op = op
        self.shape = tuple(shape)
        self.dtype = dtype
        self.value_index = 0

    @property
    def name(self):
        return self.op.name

    @property
    def ndim(self):
        return len(self.shape)

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        if len(idx) < len(self.shape):
            return TensorSlice(self, idx)
        if len(idx) > len(self.shape):
            raise TVMError(f"{self.name} has {len(self.shape)} dimension(s), indexed with {len(idx)}")
        return Load(self, idx)

    def __call__(self, *idx):
        if len(idx) != len(self.shape):
            raise TVMError(f"{self.name} has {len(self.shape)} dimension(s), called with {len(idx)}")
        return Load(self, idx)

    def __repr__(self):
        return f"Tensor(shape={list(self.shape)}, op.name={self.name})"

    __hash__ = object.__hash__


class TensorSlice:
    """``A[i]`` of a 2-d tensor: index it again (``A[i][j]``)."""

    def __init__(self, tensor, idx):
        self.tensor, self.idx = tensor, tuple(idx)

    def __getitem__(self, more):
        if not isinstance(more, tuple):
            more = (more,)
        return self.tensor[self.idx + more]


def _name(name, default):
    name = str(name) if name else default
    return name


def placeholder(shape, dtype=None, name="placeholder"):
    """``te.placeholder(shape, dtype="float32", name)``: an input tensor."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    shape = tuple(_int(d, "a placeholder dimension") for d in shape)
    return PlaceholderOp(shape, _check_dtype(dtype or "float32"), _name(name, "placeholder")).tensor


def _arg_names(fcompute, n):
    code = getattr(fcompute, "__code__", None)
    if code is None:
        return [f"i{d}" for d in range(n)]
    argc = code.co_argcount
    if code.co_flags & 0x04 or argc != n:   # *args: TVM names them i0, i1, ...
        if argc == 0 and code.co_flags & 0x04:
            return [f"i{d}" for d in range(n)]
        if argc != n:
            raise TVMError(f"fcompute takes {argc} argument(s) but the shape has {n} dimension(s)")
    return list(code.co_varnames[:n])


def compute(shape, fcompute, name="compute", tag="", attrs=None, varargs_names=None):
    """``te.compute(shape, lambda i, j: ..., name)``: a tensor defined element by element."""
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    shape = tuple(_int(d, "a compute dimension") for d in shape)
    names = list(varargs_names) if varargs_names else _arg_names(fcompute, len(shape))
    axis = [IterVar(Range(0, n), nm, IterVar.DataPar) for n, nm in zip(shape, names)]
    body = fcompute(*axis)
    if isinstance(body, (list, tuple)):
        if len(body) != 1:
            raise TVMError("te.compute with several outputs (a tuple body) is not supported by the te dialect")
        body = body[0]
    body = convert(body)
    name = _name(name, "compute")
    for x in walk(body):
        if isinstance(x, Reduce) and x is not body:
            raise TVMError(f"compute '{name}': a reduction (te.sum, te.max, ...) must be the whole body of a "
                           "compute, not part of an expression (TVM's rule); compute it in a stage of its own")
    if isinstance(body, Reduce):
        for k in body.axis:
            if not isinstance(k, IterVar) or k.iter_type != IterVar.CommReduce:
                raise TVMError(f"compute '{name}': reduce over {k!r}, which is not a te.reduce_axis")
        op = ComputeOp(name, axis, body.axis, body.source, body.dtype, tag, attrs, body.combiner, body.where)
    else:
        for x in walk(body):
            if isinstance(x, IterVar) and x.iter_type == IterVar.CommReduce:
                raise TVMError(f"compute '{name}': reduce axis '{x.name}' is used outside a reduction "
                               "(wrap the body in te.sum / te.max / te.min)")
        op = ComputeOp(name, axis, [], body, body.dtype, tag, attrs)
    return op.tensor


# -- reducers -------------------------------------------------------------------------


class CommReducer:
    """A commutative reducer: the built-in ``sum``, ``max``, ``min`` (the te
    dialect's ``"sum"`` ...) or one made by :func:`comm_reducer` (emitted as
    a ``te.reducer``)."""

    def __init__(self, name, fcombine=None, fidentity=None, builtin=None):
        self.name = name
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.builtin = builtin   # "sum" / "max" / "min" / "prod", or None for a user reducer

    def __call__(self, expr, axis=None, where=None, init=None, *args):
        if init is not None:
            raise TVMError(f"te.{self.name}: init= is not supported by the te dialect's reductions")
        if axis is None and inspect.isgenerator(expr):
            expr, axis = _generator_reduction(self.name, expr)
        if isinstance(axis, IterVar) or isinstance(axis, (list, tuple)) and axis and builtins.all(
                isinstance(a, IterVar) for a in axis):
            axes = [axis] if isinstance(axis, IterVar) else list(axis)
            return Reduce(self, expr, axes, where)
        if axis is None:
            raise TVMError(f"te.{self.name} needs axis= (a te.reduce_axis or a list of them)")
        # te.max(a, b): not a reduction but the elementwise combination (tvm.tir.max)
        return self.combine(expr, axis)

    def combine(self, a, b):
        if self.builtin == "sum":
            return binary("add", a, b)
        if self.builtin == "prod":
            return binary("mul", a, b)
        if self.builtin in ("max", "min"):
            return binary(self.builtin, a, b)
        return convert(self.fcombine(convert(a), convert(b)))

    def __repr__(self):
        return f"CommReducer({self.name})"


def _generator_reduction(reducer, gen):
    """``te.sum(A[i, k] * B[k, j] for k in range(K))`` (the form the seed's
    matmul is written in): the generator's body over a new reduce axis.

    The range is the generator's first iterable, already evaluated (its
    ``.0`` argument); the body is run once more from the generator's own
    code with the axis in place of the loop variable, its free variables
    (the compute's axes, the tensors) bound as they were."""
    rng = None
    if inspect.getgeneratorstate(gen) == inspect.GEN_CREATED:
        # a range's iterator pickles as (iter, (range,), position)
        r = getattr(gen.gi_frame.f_locals.get(".0"), "__reduce__", lambda: None)()
        if r and r[0] is iter and r[1] and isinstance(r[1][0], range) and r[2:] in ((), (0,)):
            rng = r[1][0]
    if rng is None:
        raise TVMError(f"te.{reducer}: a generator reduction must iterate over range(...) "
                       "(te.sum(expr for k in range(n))); otherwise pass axis=te.reduce_axis(...)")
    if rng.step != 1 or len(rng) == 0:
        raise TVMError(f"te.{reducer}: a generator reduction needs a non-empty range with step 1, "
                       f"not {rng!r}")
    code = gen.gi_code
    var = code.co_varnames[1] if len(code.co_varnames) > 1 else "k"
    rk = reduce_axis((rng.start, rng.stop), name=var)
    frame_locals = gen.gi_frame.f_locals
    cells = tuple(types.CellType(frame_locals[n]) for n in code.co_freevars)
    body = types.FunctionType(code, gen.gi_frame.f_globals, code.co_name, None, cells)(iter([rk]))
    terms = list(body)
    gen.close()
    if len(terms) != 1:
        raise TVMError(f"te.{reducer}: a generator reduction must have one 'for' and no 'if' "
                       "(give a te.reduce_axis and where= instead)")
    return terms[0], rk


sum = CommReducer("sum", builtin="sum")   # noqa: A001 (TVM's names)
max = CommReducer("max", builtin="max")   # noqa: A001
min = CommReducer("min", builtin="min")   # noqa: A001


def comm_reducer(fcombine, fidentity, name="reduce"):
    """``te.comm_reducer(lambda x, y: x + y, lambda t: tvm.tir.const(0, t))``:
    a user reducer, emitted as ``te.reducer @name`` (one value; the combiner
    must be commutative and associative)."""
    import inspect
    if len(inspect.signature(fcombine).parameters) != 2:
        raise TVMError("comm_reducer: only reducers of one value (fcombine(x, y)) are supported; "
                       "tuple reducers (argmax-style) are not")
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "reduce"
    return CommReducer(safe, fcombine, fidentity)


# -- elementwise functions -----------------------------------------------------------


def _float_intrin(name, tvm_name=None):
    def f(x):
        x = convert(x)
        if not is_float(x.dtype):
            raise TVMError(f"te.{tvm_name or name} takes a float, got {x.dtype} {x.text()} (use .astype)")
        return Call(name, [x], x.dtype)
    f.__name__ = tvm_name or name
    f.__doc__ = f"``te.{tvm_name or name}(x)``: ``te.intrin \"{name}\"(%x)``."
    return f


exp = _float_intrin("exp")
log = _float_intrin("log")
log2 = _float_intrin("log2")
log10 = _float_intrin("log10")
sqrt = _float_intrin("sqrt")
rsqrt = _float_intrin("rsqrt")
tanh = _float_intrin("tanh")
sigmoid = _float_intrin("sigmoid")
erf = _float_intrin("erf")
floor = _float_intrin("floor")
ceil = _float_intrin("ceil")
round = _float_intrin("round")   # noqa: A001
nearbyint = _float_intrin("round", "nearbyint")
trunc = _float_intrin("trunc")
sin = _float_intrin("sin")
cos = _float_intrin("cos")
tan = _float_intrin("tan")
asin = _float_intrin("asin")
acos = _float_intrin("acos")
atan = _float_intrin("atan")
sinh = _float_intrin("sinh")
cosh = _float_intrin("cosh")
asinh = _float_intrin("asinh")
acosh = _float_intrin("acosh")
atanh = _float_intrin("atanh")


def abs(x):   # noqa: A001
    """``te.abs``: ``fabs`` on floats, ``max(x, -x)`` on integers."""
    x = convert(x)
    if is_float(x.dtype):
        return Call("fabs", [x], x.dtype)
    return binary("max", x, -x)


def power(x, y):
    """``te.power(x, y)``: ``te.intrin "pow"``."""
    x, y = convert(x), convert(y)
    x = x if is_float(x.dtype) else x.astype("float32")
    return Call("pow", [x, convert(y, x.dtype).astype(x.dtype)], x.dtype)


def if_then_else(cond, t, f):
    """``te.if_then_else(c, a, b)``: b where c fails; reads in a branch are
    guarded by its condition, so ``A[i - 1]`` under ``i >= 1`` is safe."""
    return Select(cond, t, f)


def all(*conds):   # noqa: A001
    """``tvm.tir.all(a, b, ...)``: the conjunction."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = conds[0]
    if not conds:
        return const(True)
    out = convert(conds[0])
    for c in conds[1:]:
        out = logical("and", out, c)
    return out


def any(*conds):   # noqa: A001
    """``tvm.tir.any(a, b, ...)``: the disjunction."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = conds[0]
    if not conds:
        return const(False)
    out = convert(conds[0])
    for c in conds[1:]:
        out = logical("or", out, c)
    return out


def floordiv(a, b):
    return binary("floordiv", a, b)


def floormod(a, b):
    return binary("floormod", a, b)


def truncdiv(a, b):
    return binary("div", a, b)


def truncmod(a, b):
    return binary("truncmod", a, b)


div = truncdiv
indexdiv = floordiv
indexmod = floormod


def max_value(dtype):
    """The largest value of `dtype` (``+inf`` for floats, as the te reducers use)."""
    import numpy as np
    dtype = _check_dtype(dtype)
    if is_float(dtype):
        return Const(float("inf"), dtype)
    if dtype == "bool":
        return Const(True, dtype)
    return Const(int(np.iinfo(dtype).max), dtype)


def min_value(dtype):
    """The smallest value of `dtype` (``-inf`` for floats)."""
    import numpy as np
    dtype = _check_dtype(dtype)
    if is_float(dtype):
        return Const(float("-inf"), dtype)
    if dtype == "bool":
        return Const(False, dtype)
    return Const(int(np.iinfo(dtype).min), dtype)


def var(name="tindex", dtype="int32"):
    raise TVMError("te.var / te.size_var: symbolic sizes are not supported by the classic builder "
                   "(use Python ints; the te dialect's symbolic dimensions are reachable from its text form)")


size_var = var


def _unsupported(what, why):
    def f(*args, **kwargs):
        raise TVMError(f"te.{what} is not supported: {why}")
    f.__name__ = what
    return f


scan = _unsupported("scan", "the te dialect has no scan op")
extern = _unsupported("extern", "the te dialect's te.extern calls a tir.func of the module, not a packed function")
decl_tensor_intrin = _unsupported("decl_tensor_intrin", "the te dialect has no tensorize")
create_prim_func = _unsupported("create_prim_func", "use tvm.lower(s, args)")

from .schedule import Schedule, Stage, create_schedule  # noqa: E402,F401  (te.create_schedule, te.Schedule)



def __getattr__(name):
    # ``tvm.te.autotvm.template(...)`` / ``te.autotvm.get_config()``: how the
    # seed spells AutoTVM (classic TVM has it at ``tvm.autotvm``); the same
    # package, imported on first use.
    if name == "autotvm":
        from .. import autotvm
        return autotvm
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
