"""What a converter works with: the node it converts and a context to emit relay.

    @converter("LeakyRelu", 6)
    def leaky_relu(cx, node):
        return cx.op("nn.leaky_relu", node.input(0), alpha=node.attr("alpha", 0.01))

``cx.op(name, *operands, **attrs)`` builds a relay op by TVM's name with
result types inferred.  The relay op set grows over time, so ops are looked
up by name when a model is converted: a missing op, or a parameter the op
does not declare, makes the node *unsupported* (an UnsupportedOpError),
never a wrong graph.  A parameter TVM takes as an expression and tvmd as an
attribute (or the other way round) -- ``clip``'s bounds, ``nn.pad``'s value,
``topk``'s k -- is passed by keyword and goes wherever the op declares it.

``cx.static(v)`` is the value of `v` at import time when it can be known
(constants, shapes of statically shaped tensors, and ops over those, run by
the relay interpreter), which converters use for operands ONNX passes as
tensors but relay wants as attributes (Reshape's shape, Slice's starts).
"""

from __future__ import annotations

from ...ir import types as T
from ...ir.core import OP_CLASSES
from ...ir.diagnostics import DiagnosticError
from .errors import OnnxImportError, StaticValueRequired, UnsupportedOpError

# Constants up to this many elements are shared within the function, so that
# `0.0` or `[1]` is defined once; larger ones (weights) are defined per use.
SHARE_CONSTANT_ELEMENTS = 16


class Node:
    """One ONNX node as converters see it: inputs as relay values (None
    for an omitted optional input), attributes as Python values."""

    __slots__ = ("proto", "op_type", "domain", "name", "version", "inputs", "outputs", "attrs", "loc")

    def __init__(self, proto, op_type, domain, name, version, inputs, outputs, attrs, loc):
        self.proto = proto
        self.op_type = op_type
        self.domain = domain
        self.name = name
        self.version = version        # since_version of the schema in use
        self.inputs = inputs
        self.outputs = outputs        # output names; "" for an omitted optional output
        self.attrs = attrs
        self.loc = loc

    def input(self, i):
        return self.inputs[i] if i < len(self.inputs) else None

    def attr(self, name, default=None):
        """Attribute `name`, or `default`.  The importer checked the types
        the op's schema declares; for an op it has no schema of, a value
        of another kind than the default (a string for a number, a list
        for a scalar) is a located error, never one a converter trips on."""
        v = self.attrs.get(name, default)
        if default is not None and v is not default and _attr_kind(v) != _attr_kind(default):
            raise OnnxImportError(self.loc, f"{self.describe()}: attribute '{name}' must be "
                                            f"{_attr_kind(default)}, got {_attr_kind(v)} {v!r}"[:300])
        return v

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def wants_output(self, i) -> bool:
        return i < len(self.outputs) and self.outputs[i] != ""

    def describe(self) -> str:
        return f"node '{self.name}' ({self.op_type})"


def _attr_kind(v) -> str:
    if isinstance(v, (bool, int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (tuple, list)):
        return "a list"
    return f"a {type(v).__name__}"


class _EmptyOptional:
    """An ONNX optional holding nothing: known at import time, so the
    Optional* converters resolve it and no relay value stands for it."""

    __slots__ = ()
    name = None
    type = None

    def defining_op(self):
        return None

    def __repr__(self):
        return "<empty optional>"


EMPTY_OPTIONAL = _EmptyOptional()


class ConvertContext:
    """Emits relay ops for the node being converted (`node`) into `builder`."""

    def __init__(self, builder, bound_values=None):
        self.builder = builder
        self.node: Node | None = None
        # block argument -> numpy array known at import time (graph inputs
        # the backend binds, unfrozen initializers); reading one is recorded
        self.bound_values = bound_values or {}
        self.bound_used: set = set()
        self._static: dict = {}     # value -> array, bound inputs included
        self._pure: dict = {}       # value -> array, from constants alone
        self._shared_consts: dict = {}

    # -- errors ----------------------------------------------------------------

    @property
    def loc(self):
        return self.builder.loc

    def error(self, message) -> OnnxImportError:
        """A user error at the current node."""
        return OnnxImportError(self.loc, f"{self.node.describe()}: {message}")

    def unsupported(self, detail) -> UnsupportedOpError:
        """The importer cannot convert this node (yet): `detail` says why."""
        n = self.node
        if n is None:   # an initializer or a graph input, outside any node
            return UnsupportedOpError(self.loc, f"unsupported: {detail}", ["graph"], detail)
        return UnsupportedOpError(self.loc, f"{n.describe()}: unsupported: {detail}", [n.op_type], detail)

    # -- types -------------------------------------------------------------------

    def tensor(self, v, what="input"):
        """`v`, which must be a tensor: an omitted input (None), an empty
        optional or a sequence is a located error naming `what`."""
        if v is None:
            raise self.error(self._missing(v, what))
        t = v.type
        if not isinstance(t, T.TensorType):
            raise self.error(f"expects a tensor as {self._which(v, what)}, got "
                             f"{'an empty optional' if t is None else t}")
        return v

    def _which(self, v, what):
        """`what`, made precise with the input's position and name when `v` is one."""
        n = self.node
        if n is not None and v is not None:
            for i, x in enumerate(n.inputs):
                if x is v:
                    return f"input {i} ('{n.proto.input[i]}')" if n.proto is not None else f"input {i}"
        return f"its {what}"

    def _missing(self, v, what):
        n = self.node
        given = len(n.inputs) if n is not None else 0
        return (f"needs {'its ' + what if what != 'input' else 'an input'} that is not given "
                f"(an omitted optional input; the node has {given} input(s))")

    def ttype(self, v) -> T.TensorType:
        return self.tensor(v).type

    def shape(self, v) -> tuple:
        """The shape of a tensor value, None for a dynamic dimension."""
        return self.tensor(v).type.shape

    def rank(self, v) -> int:
        return len(self.shape(v))

    def dtype(self, v):
        return self.tensor(v).type.element_type

    def static_shape(self, v, what="input") -> tuple:
        """The shape, which must be fully known at import time."""
        s = self.shape(v)
        if None in s:
            raise StaticValueRequired(self.loc, f"{self.node.describe()}: needs the static shape of its {what}, "
                                                f"which is {v.type}")
        return s

    # -- building ops --------------------------------------------------------------

    def op(self, name, *operands, **attrs):
        """Build relay op `name` (TVM's spelling) on `operands` and insert it;
        returns its result.  Keyword parameters go to the op's attribute or
        operand of that name; None means "leave the default"."""
        cls = OP_CLASSES.get("relay." + name)
        if cls is None:
            raise self.unsupported(f"relay op '{name}' is not available")
        ops = list(operands)
        declared = [n.lstrip("*") for n in cls.OPERANDS] if cls.OPERANDS is not None else []
        given = {}
        for k, v in attrs.items():
            if v is None:
                continue
            if k in cls.ATTRS:
                given[k] = self._attr_value(cls, k, v)
            elif k in declared:
                i = declared.index(k)
                if len(ops) < i:
                    raise self.unsupported(f"relay op '{name}' takes '{k}' after operands not given")
                ops.insert(i, self._operand_value(v, ops))
            else:
                raise self.unsupported(f"relay op '{name}' has no parameter '{k}'")
        op = cls.build(*ops, loc=self.builder.loc, **given)
        self.builder.insert(op)
        return op.results[0]

    def _attr_value(self, cls, k, v):
        import numpy as np
        from ...ir.core import Value
        if isinstance(v, Value):
            arr = self.static(v)
            if arr is None:
                raise StaticValueRequired(self.loc, f"{self.node.describe()}: relay op '{cls.name[6:]}' "
                                                    f"takes '{k}' as an attribute, but its value is only "
                                                    f"known at run time")
            v = arr.tolist()
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, list):
            v = tuple(v)
        kind = cls.ATTRS[k].kind.name
        if kind in ("float", "integer") and isinstance(v, tuple) and len(v) == 1:
            v = v[0]        # a one-element tensor where relay takes a number
        if isinstance(v, T.Type) and kind != "type":
            v = T.tvm_dtype_name(v)
        elif isinstance(v, str) and kind == "type":
            v = T.from_dtype_name(v)
        elif kind == "float" and type(v) is int:
            v = float(v)
        return v

    def _operand_value(self, v, ops):
        from ...ir.core import Value
        if isinstance(v, Value):
            return v
        dtype = ops[0].type.element_type if ops and isinstance(ops[0].type, T.TensorType) else None
        return self.const(v, dtype)

    def get_item(self, t, i):
        return self.op("get_item", t, index=i)

    def const(self, value, dtype=None, key=None, loc=None):
        """A relay.constant holding `value` (array or scalar) as `dtype` (a
        tvmd type or numpy dtype; default: the value's own); `key` names it
        in the resource section."""
        import numpy as np
        from ...dialects.relay.ops.function import ConstantOp
        from ...ir.attributes import DenseAttr
        if dtype is not None and not isinstance(dtype, T.Type):
            dtype = T.from_numpy_dtype(np.dtype(dtype))
        arr = np.asarray(value, dtype=T.to_numpy_dtype(dtype) if dtype is not None else None)
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)   # a Python float means f32, as in TVM's const()
        share = key is None and arr.size <= SHARE_CONSTANT_ELEMENTS
        if share:
            # per block: a constant made inside an `if` branch is not visible after it
            ck = (id(self.builder.block), arr.dtype, arr.shape, arr.tobytes())   # ml_dtypes' all read '|V1'
            hit = self._shared_consts.get(ck)
            if hit is not None and hit.defining_op().parent is not None:
                return hit
        try:
            if arr.dtype.name == "bfloat16":    # ml_dtypes'; tvmd holds bf16 as its bits
                arr = arr.view(np.uint16)
                tt = T.TensorType(arr.shape, T.bf16)
            else:
                tt = T.TensorType(arr.shape, T.from_numpy_dtype(arr.dtype))
        except TypeError:
            raise self.unsupported(f"constants of dtype {arr.dtype}") from None
        op = ConstantOp.get(DenseAttr(arr, tt, key), loc=loc or self.builder.loc)
        self.builder.insert(op)
        v = op.results[0]
        self._static[v] = self._pure[v] = op.value.array
        if share:
            self._shared_consts[ck] = v
        return v

    def check_size(self, shape, dtype, doing):
        """Before building a numpy array of `shape` and `dtype` (a tvmd type
        or numpy dtype): more bytes than the project's constant limit
        (ir.attributes.max_constant_bytes) is an UnsupportedOpError naming
        the node and `doing`."""
        import numpy as np
        from ...ir.attributes import max_constant_bytes
        if not isinstance(dtype, T.Type):
            dtype = T.from_numpy_dtype(np.dtype(dtype))
        dims = tuple(int(d) for d in shape)
        count = 1
        for d in dims:
            count *= max(d, 0)
        n = count * T.to_numpy_dtype(dtype).itemsize
        limit = max_constant_bytes()
        if n > limit:
            shown = "x".join(str(d) for d in dims)
            raise UnsupportedOpError(self.loc, f"{self.node.describe()}: unsupported: {doing} would take a "
                                               f"constant too large: {n} bytes (tensor<{shown}x{dtype}>), "
                                               f"more than the limit of {limit} (TVMD_MAX_CONSTANT_BYTES)",
                                     [self.node.op_type], "a constant too large")

    def scalar(self, value, like):
        """A 0-d constant with the element type of value `like`."""
        return self.const(value, self.dtype(like))

    def cast(self, v, dtype):
        """`v` as element type `dtype` (no op when it already is)."""
        if self.dtype(v) is dtype:
            return v
        return self.op("cast", v, dtype=dtype)

    # -- values known at import time ------------------------------------------------

    def static(self, v, bound=True):
        """`v`'s value as a numpy array when it is known at import time,
        else None.  With `bound` False, only what follows from constants
        counts (not graph inputs the backend bound)."""
        from ...ir.core import BlockArgument
        if v is None or v is EMPTY_OPTIONAL:
            raise self.error(self._missing(v, "input") if v is None else "reads an empty optional as a value")
        memo = self._static if bound else self._pure
        if v in memo:
            return memo[v]
        # depth-first over producers, iteratively: graphs can be deep
        stack = [v]
        failed = set()
        while stack:
            x = stack[-1]
            if x in memo or x in failed:
                stack.pop()
                continue
            if isinstance(x, BlockArgument):
                stack.pop()
                arr = self.bound_values.get(x) if bound else None
                if arr is None:
                    failed.add(x)
                else:
                    self.bound_used.add(x)
                    memo[x] = arr
                continue
            op = x.defining_op()
            pending = [o for o in op.operands if o not in memo and o not in failed]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            arr = None
            if not any(o in failed for o in op.operands):
                arr = self._evaluate(op, memo)
            if arr is None:
                failed.add(x)
            else:
                memo[x] = arr
        return memo.get(v)

    @staticmethod
    def _evaluate(op, memo):
        from ...dialects.relay.interpreter import evaluate_op
        from ...ir.attributes import max_constant_bytes, tensor_bytes
        if op.name == "relay.call" or len(op.results) != 1:
            return None
        n = tensor_bytes(op.results[0].type)
        if n is None or n > max_constant_bytes():
            return None     # too large to know at import time (or of no static size)
        try:
            return evaluate_op(op, [memo[o] for o in op.operands])
        except DiagnosticError:
            return None

    def static_value(self, v, what):
        """The value of `v` at import time, or StaticValueRequired."""
        if v is None:
            raise self.error(self._missing(v, what))
        arr = self.static(v)
        if arr is None:
            raise StaticValueRequired(self.loc, f"{self.node.describe()}: needs the value of its {what} "
                                                f"at import time, but it is computed at run time")
        return arr

    def static_ints(self, v, what):
        """A static integer tensor as a tuple of Python ints."""
        import numpy as np
        arr = np.asarray(self.static_value(v, what)).reshape(-1)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise self.error(f"its {what} must hold integers, got {arr.tolist()[:8]}")
        return tuple(int(x) for x in arr)

    def static_floats(self, v, what):
        return tuple(float(x) for x in self.static_value(v, what).reshape(-1))

    def broadcast(self, a, b, what):
        """numpy's broadcast of two static shapes; shapes that do not
        broadcast are a located error naming `what` (e.g. "batch dimensions")."""
        import numpy as np
        try:
            return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
        except ValueError:
            raise self.error(f"its {what} {list(a)} and {list(b)} do not broadcast") from None

    def static_scalar(self, v, what):
        """The one element of a static tensor (a scalar or a 1-element
        tensor), as a numpy scalar; any other size is a located error."""
        import numpy as np
        arr = np.asarray(self.static_value(v, what))
        if arr.size != 1:
            raise self.error(f"its {what} must hold one value, got {self.ttype(v)}")
        x = arr.reshape(-1)[0]
        if arr.dtype.kind == "f" and not np.isfinite(x):
            raise self.error(f"its {what} must be finite, got {x}")
        return x
