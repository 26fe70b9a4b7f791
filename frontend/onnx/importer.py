"""ONNX GraphProto -> a relay module with one function, ``@main``.

* Graph inputs (those that are not initializers) become the parameters of
  ``@main``, in order, typed from the model (a dynamic dimension is ``?``)
  unless `shape` / `dtype` say otherwise.
* Initializers become ``relay.constant`` ops whose DenseAttr key is the
  initializer's name, so large ones print in the resource section under
  that name; with ``freeze_params=False`` they become parameters after the
  inputs instead, and their arrays are returned as `params`.
* Each node is converted by the converter its op type and opset select
  (registry.py), at a ``NameLoc`` carrying the node's name; results take
  the ONNX output names.
* A node whose inputs are all constants and whose outputs are small (shape
  arithmetic, mostly) is folded to constants as TVM's importer did; what
  nothing uses any more is erased at the end.  DequantizeLinear is never
  folded: its int8 operand is what an integer product takes.
"""

from __future__ import annotations

import sys

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from ...ir.location import NameLoc
from .dtypes import (elem_type_problem, onnx_type_name, tensor_problem, tensor_to_numpy, to_tvmd,
                     value_info_problem, value_info_type)
from .errors import OnnxImportError, UnsupportedOpError, UseFunctionBody

# Outputs of all-constant nodes up to this many elements are folded.
FOLD_ELEMENTS = 1024

# The most node copies one import makes by unrolling, all levels together:
# each node of a subgraph converted (a Loop or Scan iteration, an If
# branch) and of a function body expanded.  Each Loop / Scan bounds its
# own count, but nested ones multiply; this bounds the whole import (time
# ~ model size + this: some 10 to 20 seconds at most).
MAX_UNROLLED_NODES = 1 << 17
TOO_MUCH_UNROLLING = "too much unrolling"     # the UnsupportedOpError's detail past it


def model_opsets(model, opset=None) -> dict[str, int]:
    """domain -> opset version the model imports ('' for ai.onnx)."""
    from .registry import normalize_domain
    out = {}
    for o in model.opset_import:
        out[normalize_domain(o.domain)] = o.version
    if opset is not None:
        out[""] = int(opset)
    out.setdefault("", 1)
    return out


class _Schemas:
    """The OpSchema of each (domain, op_type) at the model's opsets, cached."""

    def __init__(self, opsets):
        self.opsets = opsets
        self.cache = {}

    def schema(self, domain, op_type):
        """The schema in use, or None for an op ONNX does not define."""
        key = (domain, op_type)
        if key not in self.cache:
            import onnx.defs
            try:
                self.cache[key] = onnx.defs.get_schema(op_type, self.opsets.get(domain, 1), domain)
            except onnx.defs.SchemaError:
                self.cache[key] = None
        return self.cache[key]

    def version(self, domain, op_type):
        s = self.schema(domain, op_type)
        return s.since_version if s is not None else -1


class GraphImporter:
    def __init__(self, model, shape=None, dtype=None, opset=None, freeze_params=True,
                 input_values=None):
        self.model = model
        self.graph = model.graph
        self.shape = dict(shape or {})
        self.dtype = dtype
        self.opsets = model_opsets(model, opset)
        self.schemas = _Schemas(self.opsets)
        self.freeze_params = freeze_params
        self.input_values = dict(input_values or {})
        self.values = {}          # ONNX tensor name -> relay Value
        self.bad_inputs = {}      # input name -> why it cannot be a relay parameter
        self.initializers = {}    # name -> TensorProto, turned into constants on first use
        self.params = {}
        self.bound_inputs = {}    # block argument -> input name (for the backend)
        from .functions import local_functions
        self.functions = local_functions(model)
        self.expansions = 0       # function bodies expanded so far (for unique names)
        self.current_schemas = None   # the opsets of the node being converted
        self.param_inputs = []    # the graph inputs that became @main's parameters, in order
        self.checked_graphs = {}  # id -> subgraph that check_graph accepted
        self.unrolled = 0         # node copies made so far (see MAX_UNROLLED_NODES)
        self.expanding = set()    # (domain, name) of the function bodies being expanded
        self.said_bodies = set()  # (op type, why) of the converters' UseFunctionBody already said

    # -- the whole graph -----------------------------------------------------

    def run(self):
        from ...dialects.builtin.ops import ModuleOp
        from ...dialects.relay.ops.function import FuncOp, ReturnOp
        from ...dialects.relay.passes.dce import erase_dead_ops
        from ...ir.builder import Builder
        from ...ir.core import Block, Region
        from ...ir.verifier import verify
        from .context import ConvertContext

        check_strings(self.model)
        self.check_model()
        check_graph(self.graph, self.graph_loc())
        self.check_supported()
        graph = self.graph
        self.initializers = {t.name: t for t in graph.initializer}
        if graph.sparse_initializer:
            raise OnnxImportError(self.graph_loc(), "sparse initializers are not supported")
        block = Block()
        self.cx = cx = ConvertContext(Builder.at_end(block))
        cx.importer = self
        self.add_inputs(block)
        for node in graph.node:
            self.convert_node(node)
        results = [self.output_value(o) for o in graph.output]
        block.append(ReturnOp(results, (), None, (), self.graph_loc()))
        erase_dead_ops(block, None)
        ft = T.FunctionType([a.type for a in block.args], [v.type for v in results])
        func = FuncOp((), (), {"sym_name": "main", "function_type": ft}, [Region([block])], self.graph_loc())
        module = ModuleOp.create_empty()
        module.body.append(func)
        verify(module)
        self.bound_used = sorted(self.bound_inputs[a] for a in cx.bound_used if a in self.bound_inputs)
        return module, (self.params if not self.freeze_params else None)

    def graph_loc(self):
        return NameLoc(self.graph.name or "graph")

    def check_model(self):
        """A model has a graph with outputs and imports opsets the
        converters know: the default domain's from 1 to the newest the
        installed onnx defines (converters select by schema version, so
        a newer opset would silently convert as the newest known)."""
        import onnx.defs
        if not self.model.HasField("graph"):
            raise OnnxImportError(self.graph_loc(), "not an ONNX model: it has no graph (an empty file?)")
        if not self.graph.output:
            raise OnnxImportError(self.graph_loc(), f"graph '{self.graph.name}' has no outputs")
        for t in self.graph.initializer:     # all, used or not: reading the lengths costs nothing
            p = tensor_problem(t)
            if p is not None:
                raise _bad_initializer(t, p)
        for kind, vis in (("input", self.graph.input), ("output", self.graph.output)):
            for vi in vis:
                p = value_info_problem(vi) if vi.name not in self.shape else None
                if p is not None:
                    raise OnnxImportError(self.graph_loc(), f"graph {kind} '{vi.name}' {p}")
        top = onnx.defs.onnx_opset_version()
        for domain, v in self.opsets.items():
            name = domain or "ai.onnx"
            if v < 1:
                raise OnnxImportError(self.graph_loc(), f"invalid opset version {v} of domain '{name}': "
                                                        f"opset versions start at 1")
            if domain == "" and v > top:
                raise OnnxImportError(self.graph_loc(), f"unsupported opset version {v} of domain '{name}': "
                                                        f"the importer supports opsets 1 to {top}")

    def check_supported(self):
        """Every op type has a converter or a function body, or one error
        naming them all."""
        from .functions import has_body
        from .registry import has_converter
        missing = {}
        for node in self.graph.node:
            if not has_converter(node.domain, node.op_type) and not has_body(self, node):
                missing.setdefault(_op_name(node), node)
        if not missing:
            return
        first = next(iter(missing.values()))
        names = ", ".join(sorted(missing))
        notes = [(self.node_loc(n), f"{op} is first used by {_describe(n)}")
                 for op, n in list(missing.items())[1:6]]
        raise UnsupportedOpError(self.node_loc(first),
                                 f"{_describe(first)}: unsupported ONNX op type{'s' if len(missing) > 1 else ''}: "
                                 f"{names}", sorted({n.op_type for n in missing.values()}), "no converter", notes)

    def node_loc(self, node):
        return NameLoc(_name(node))

    def charge_unrolled(self, n, proto=None):
        """Count `n` more node copies made by unrolling for node `proto`
        (default: the node being converted); past MAX_UNROLLED_NODES in all,
        an UnsupportedOpError naming it."""
        self.unrolled += max(int(n), 1)
        if self.unrolled > MAX_UNROLLED_NODES:
            if proto is None:
                node = self.cx.node
                loc, who, op_type = node.loc, node.describe(), node.op_type
            else:
                loc, who, op_type = self.node_loc(proto), _describe(proto), proto.op_type
            raise UnsupportedOpError(loc, f"{who}: unsupported: unrolling it takes the node copies made by "
                                          f"unrolling (loop and scan iterations, branches, function bodies, "
                                          f"recurrent steps; nested ones multiply) past {MAX_UNROLLED_NODES} "
                                          f"in all", [op_type], TOO_MUCH_UNROLLING)

    # -- inputs and outputs ----------------------------------------------------

    def add_inputs(self, block):
        import numpy as np
        for vi in self.graph.input:
            name = vi.name
            if name in self.initializers:
                continue      # an old-style model lists its weights as inputs too
            t = self.input_type(vi)
            if t is None:
                continue
            arg = block.add_arg(t, name)
            self.values[name] = arg
            self.bound_inputs[arg] = name
            self.param_inputs.append(name)
            if name in self.input_values:
                v = self.input_values[name]
                self.cx.bound_values[arg] = tuple(v) if isinstance(t, T.TupleType) else np.asarray(v)
        if not self.freeze_params:
            for name, tensor in self.initializers.items():
                arr = self.initializer_array(tensor)
                if arr is None:
                    continue
                arg = block.add_arg(T.TensorType(arr.shape, T.from_numpy_dtype(arr.dtype)), name)
                self.values[name] = arg
                self.params[name] = arr
                self.cx.bound_values[arg] = arr

    def input_type(self, vi):
        name = vi.name
        info = value_info_type(vi)
        if info is None:
            return self.sequence_input_type(vi)
        elem, dims = info
        dt = self.dtype.get(name) if isinstance(self.dtype, dict) else self.dtype
        if dt is not None and (isinstance(self.dtype, dict) or elem == 0):
            et = dt if isinstance(dt, T.Type) else T.from_dtype_name(str(dt))
        else:
            et = to_tvmd(elem)
            p = elem_type_problem(elem)
            if p is not None:
                raise OnnxImportError(self.graph_loc(), f"graph input '{name}' has {p}")
            if et is None:
                self.bad_inputs[name] = f"{onnx_type_name(elem)} tensors"
                return None
        if name in self.shape:
            dims = tuple(None if (d is None or (isinstance(d, int) and d < 0)) else int(d)
                         for d in self.shape[name])
        elif dims is None:
            raise OnnxImportError(self.graph_loc(), f"graph input '{name}' has no shape; give one with "
                                                    f"shape={{'{name}': (...)}}")
        return T.TensorType(dims, et)

    def sequence_input_type(self, vi):
        """A sequence input is a tuple, an optional one the value it holds,
        typed from the value bound to it (a sequence's length and element
        shapes are not in the model); an empty optional has no parameter."""
        import numpy as np

        from .context import EMPTY_OPTIONAL
        name = vi.name
        kind = vi.type.WhichOneof("value")
        if kind not in ("sequence_type", "optional_type") or name not in self.input_values:
            self.bad_inputs[name] = (f"a {kind.split('_')[0]} graph input with no value bound"
                                     if kind in ("sequence_type", "optional_type") else f"a {kind} graph input")
            return None
        value = self.input_values[name]
        if value is None and kind == "optional_type":
            self.values[name] = EMPTY_OPTIONAL
            return None
        try:
            if isinstance(value, (list, tuple)):
                return T.TupleType([T.TensorType(np.shape(a), T.from_numpy_dtype(np.asarray(a).dtype))
                                    for a in value])
            arr = np.asarray(value)
            return T.TensorType(arr.shape, T.from_numpy_dtype(arr.dtype))
        except TypeError:
            self.bad_inputs[name] = "a sequence of a dtype tvmd tensors do not hold"
            return None

    def initializer_array(self, tensor):
        import numpy as np
        p = elem_type_problem(tensor.data_type)
        if p is None and to_tvmd(tensor.data_type) is None:
            self.bad_inputs[tensor.name] = f"{onnx_type_name(tensor.data_type)} tensors"
            return None
        return np.asarray(tensor_to_numpy(tensor, lambda m: _bad_initializer(tensor, m)))

    def value(self, name, node=None):
        """The relay value of ONNX tensor `name`, read by `node` (None: a
        graph output)."""
        v = self.values.get(name)
        if v is not None:
            return v
        tensor = self.initializers.get(name)
        if tensor is not None:
            arr = self.initializer_array(tensor)
            if arr is not None:
                v = self.cx.const(arr, key=name, loc=NameLoc(name))
                v.name = name
                self.values[name] = v
                return v
        loc = self.node_loc(node) if node is not None else self.graph_loc()
        who = _describe(node) if node is not None else f"graph output '{name}'"
        why = self.bad_inputs.get(name)
        if why is not None:
            op_type = node.op_type if node is not None else "Identity"
            raise UnsupportedOpError(loc, f"{who}: unsupported: '{name}' is {why}", [op_type], why)
        if node is None:
            raise OnnxImportError(loc, f"{who} is not produced by any node")
        raise OnnxImportError(loc, f"{who}: input '{name}' is not defined by any earlier node, "
                                   f"initializer or graph input")

    def output_value(self, vi):
        """The value of graph output `vi`, checked against its declared
        element type (a mismatch is a converter bug, caught here)."""
        v = self.value(vi.name)
        if v.type is None:
            raise UnsupportedOpError(self.graph_loc(), f"graph output '{vi.name}' is an empty optional, "
                                                       f"which a relay function cannot return", ["Optional"],
                                     "an empty optional graph output")
        info = value_info_type(vi)
        if info is not None and info[0] and isinstance(v.type, T.TensorType):
            want = to_tvmd(info[0])
            if want is not None and want is not v.type.element_type:
                raise OnnxImportError(self.graph_loc(), f"graph output '{vi.name}' is declared "
                                                        f"{onnx_type_name(info[0])} but converts to {v.type}")
        return v

    # -- nodes -------------------------------------------------------------------

    def convert_node(self, proto, schemas=None):
        """Convert one node; `schemas` are the opsets of the function body
        it comes from (default: the model's)."""
        from .context import Node
        from .registry import lookup, normalize_domain
        schemas = schemas or self.schemas
        loc = self.node_loc(proto)
        domain = normalize_domain(proto.domain)
        schema = schemas.schema(domain, proto.op_type)
        version = schema.since_version if schema is not None else -1
        if schema is None and (proto.domain, proto.op_type) not in self.functions:
            first = first_version(domain, proto.op_type)
            if first is not None:
                raise OnnxImportError(loc, f"{_describe(proto)}: the op is not in opset "
                                           f"{schemas.opsets.get(domain, 1)} of domain '{domain or 'ai.onnx'}' "
                                           f"that the model imports (it first appears in opset {first})")
        check_node(proto, schema, loc)
        fn = lookup(domain, proto.op_type, version if version > 0 else 10 ** 6)
        if fn is None:
            if self.expand_function(proto, domain, schemas):
                return
            from .registry import has_converter
            if not has_converter(domain, proto.op_type):
                raise UnsupportedOpError(loc, f"{_describe(proto)}: unsupported ONNX op type: {_op_name(proto)}",
                                         [proto.op_type], "no converter")
            raise UnsupportedOpError(loc, f"{_describe(proto)}: unsupported: version {version} of the op "
                                          f"(opset {schemas.opsets.get(domain)})", [proto.op_type],
                                     f"opset version {version}")
        inputs = [self.value(n, proto) if n else None for n in proto.input]
        while inputs and inputs[-1] is None:
            inputs.pop()
        node = Node(proto, proto.op_type, domain, proto.name or loc.name, version, inputs,
                    list(proto.output), parse_attributes(proto, schema), loc)
        cx = self.cx
        cx.node = node
        cx.builder.loc = loc
        saved_schemas, self.current_schemas = self.current_schemas, schemas
        try:
            try:
                outs = fn(cx, node)
            except UseFunctionBody as why:
                if (node.op_type, why.why) not in self.said_bodies:   # once per op type and reason
                    self.said_bodies.add((node.op_type, why.why))
                    sys.stderr.write(f"tvmd: {node.op_type} nodes with {why.why} are converted through "
                                     f"the op's ONNX function body\n")
                if not self.expand_function(proto, domain, schemas):
                    raise cx.unsupported(why.why) from None
                return
            self.bind_outputs(node, outs)
        except DiagnosticError as e:
            # an op's own error ("'relay.reshape' op ..."): say which node built it
            d = e.diagnostics[0]
            if not d.message.startswith("node '"):
                d.message = f"{node.describe()}: {d.message}"
            raise
        finally:
            self.current_schemas = saved_schemas

    def convert_subgraph(self, graph, block=None, inputs=()):
        """Convert the nodes of a subgraph (a branch, a loop body), which
        reads outer tensors by name, into `block` (None: the current block,
        a branch known at import time or a loop unrolled); `inputs` are the
        values of the subgraph's inputs.  Returns the values of its outputs;
        names it defines do not leak out."""
        from ...ir.builder import Builder
        cx, node = self.cx, self.cx.node
        if len(inputs) != len(graph.input):
            raise OnnxImportError(cx.loc, f"{node.describe()}: its subgraph '{graph.name}' takes "
                                          f"{len(graph.input)} input(s), given {len(inputs)}")
        self.charge_unrolled(len(graph.node))
        if id(graph) not in self.checked_graphs:     # once, not per unrolled iteration
            check_graph(graph, cx.loc, lambda name: name in self.values or name in self.initializers)
            self.checked_graphs[id(graph)] = graph   # (held, so that the id is not reused)
        saved_values, saved_builder, saved_inits = dict(self.values), cx.builder, self.initializers
        self.initializers = dict(saved_inits, **{t.name: t for t in graph.initializer})
        for vi, v in zip(graph.input, inputs):
            self.values[vi.name] = v
        if block is not None:
            cx.builder = Builder.at_end(block)
        try:
            for inner in graph.node:
                self.convert_node(inner, self.current_schemas)
            return [self.value(o.name) for o in graph.output]
        finally:
            self.values, self.initializers = saved_values, saved_inits
            cx.builder, cx.node = saved_builder, node
            cx.builder.loc = node.loc

    def expand_function(self, proto, domain, schemas):
        """Convert `proto` through its function body; False when it has none.
        What the body cannot convert is reported against `proto`'s op."""
        from .functions import expand, function_body, type_proto
        types = [type_proto(self.value(n, proto).type) if n else type_proto(None) for n in proto.input]
        fproto, defaults = function_body(self.functions, proto, domain, types, schemas.opsets)
        if fproto is None:
            return False
        key = (fproto.domain, fproto.name)
        if key in self.expanding:
            raise OnnxImportError(self.node_loc(proto), f"{_describe(proto)}: function '{_op_name(proto)}' calls "
                                                        f"itself (directly or through other functions); ONNX "
                                                        f"functions cannot recurse")
        self.expansions += 1
        prefix = f"{proto.name or proto.op_type}.{self.expansions}/"
        nodes = expand(proto, fproto, defaults, prefix)
        self.charge_unrolled(len(nodes), proto)
        # a body that does not import a domain it uses reads it at the caller's version
        from .registry import normalize_domain
        opsets = dict(schemas.opsets)
        opsets.update({normalize_domain(o.domain): o.version for o in fproto.opset_import})
        inner = _Schemas(opsets)
        self.expanding.add(key)
        try:
            for n in nodes:
                self.convert_node(n, inner)
        except UnsupportedOpError as e:
            if proto.op_type not in e.op_types and e.detail != TOO_MUCH_UNROLLING:
                d = e.diagnostics[0]
                raise UnsupportedOpError(self.node_loc(proto), f"{_describe(proto)}: unsupported: its "
                                                               f"function body needs {d.message}",
                                         [proto.op_type], f"via {', '.join(e.op_types)}: {e.detail}") from None
            raise
        finally:
            self.expanding.discard(key)
        return True

    def bind_outputs(self, node, outs):
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        # a dequantized constant stays a qnn.dequantize of the int8 values:
        # fake-quantization-to-integer computes its products on them (and
        # build's fold-constant folds what it leaves)
        const_inputs = node.inputs and node.op_type != "DequantizeLinear" and \
            all(v is None or _is_constant(v) for v in node.inputs)
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            if i >= len(outs) or outs[i] is None:
                raise self.cx.unsupported(f"output {i} ('{name}')")
            v = outs[i]
            if const_inputs and not _is_constant(v):
                v = self.fold(v, name)
            self.values[name] = v
            if v.name is None and v.type is not None:
                v.name = name     # the printed IR keeps the model's tensor names

    def fold(self, v, name):
        """`v` as a constant when it is small and follows from constants."""
        t = v.type
        if not isinstance(t, T.TensorType) or not t.is_static or t.num_elements() > FOLD_ELEMENTS:
            return v
        arr = self.cx.static(v, bound=False)
        if arr is None:
            return v
        return self.cx.const(arr, t.element_type, key=name)


def check_node(proto, schema, loc):
    """A node agrees with its op's schema (when ONNX defines the op): no
    more inputs and outputs than the op has, every required input named
    ("" omits an optional input only), every required attribute given,
    each attribute of the type the schema says.  Converters rely on this."""
    if schema is None:
        return
    from onnx import AttributeProto
    from onnx.defs import OpSchema
    who = _describe(proto)
    inputs = list(proto.input)
    while inputs and not inputs[-1]:
        inputs.pop()          # trailing optional inputs left out
    if len(inputs) > schema.max_input:
        raise OnnxImportError(loc, f"{who}: takes at most {schema.max_input} input(s), given {len(inputs)}")
    formal = schema.inputs
    for i in range(max(len(inputs), schema.min_input)):
        if i < len(inputs) and inputs[i]:
            continue
        p = formal[min(i, len(formal) - 1)]
        if p.option != OpSchema.FormalParameterOption.Optional:
            raise OnnxImportError(loc, f"{who}: required input {i} ('{p.name}') is missing"
                                       f"{' (its name is empty)' if i < len(proto.input) else ''}")
    if not schema.min_output <= len(proto.output) <= schema.max_output:
        raise OnnxImportError(loc, f"{who}: has {len(proto.output)} output(s); the op has "
                                   f"{schema.min_output} to {schema.max_output}")
    given = {a.name: a for a in proto.attribute}
    for name, a in schema.attributes.items():
        if a.required and name not in given:
            raise OnnxImportError(loc, f"{who}: required attribute '{name}' is missing")
        got = given.get(name)
        if got is not None and got.type != int(a.type):
            raise OnnxImportError(loc, f"{who}: attribute '{name}' must be {a.type.name}, got "
                                       f"{AttributeProto.AttributeType.Name(got.type)}")


_FIRST_VERSIONS = None


def first_version(domain, op_type):
    """The first opset of `domain` that defines `op_type`, None when ONNX
    defines it in none."""
    global _FIRST_VERSIONS
    if _FIRST_VERSIONS is None:
        import onnx.defs
        from .registry import normalize_domain
        firsts = {}
        for s in onnx.defs.get_all_schemas_with_history():
            key = (normalize_domain(s.domain), s.name)
            firsts[key] = min(firsts.get(key, s.since_version), s.since_version)
        _FIRST_VERSIONS = firsts
    return _FIRST_VERSIONS.get((domain, op_type))


def check_strings(model):
    """Every string in the model is valid UTF-8 (protobuf hands an invalid
    one over as bytes, which nothing downstream expects)."""
    from google.protobuf.descriptor import FieldDescriptor as F
    from google.protobuf.message import Message
    stack = [(model, "")]
    while stack:
        msg, where = stack.pop()
        for field, value in msg.ListFields():
            if field.type == F.TYPE_STRING:
                repeated = not isinstance(value, (str, bytes))
                for i, x in enumerate(value if repeated else [value]):
                    if isinstance(x, bytes):
                        raise OnnxImportError(NameLoc("model"), f"{where or 'the model'}: {field.name}{f'[{i}]' if repeated else ''} "
                                                                f"{x!r} is not valid UTF-8")
            elif field.type == F.TYPE_MESSAGE:
                repeated = not isinstance(value, Message)
                for i, c in enumerate(value if repeated else [value]):
                    stack.append((c, _where(where, field.name, i, c, repeated)))


def _where(outer, field, i, msg, repeated):
    """How check_strings names a message inside `outer`: by its name where
    it has one that is valid (a node also by its op type)."""
    sep = ", " if outer else ""
    name = msg.name if hasattr(msg, "name") and isinstance(msg.name, str) else ""
    if field == "node" and isinstance(msg.op_type, str):
        out0 = msg.output[0] if msg.output and isinstance(msg.output[0], str) else ""
        return f"{outer}{sep}node '{name or out0 or msg.op_type}' ({msg.op_type})"
    if name:
        return f"{outer}{sep}{field} '{name}'"
    return f"{outer}{sep}{field}{f'[{i}]' if repeated else ''}"


def check_graph(graph, loc, visible=lambda name: False):
    """A graph is in SSA form and in topological order: its inputs,
    initializers and node outputs are named once each (an initializer may
    repeat an input: old models list weights as inputs), each node reads
    names defined before it (or `visible` from an enclosing graph), its
    outputs are named once."""
    what = f"graph '{graph.name}'" if graph.name else "the graph"
    defined = {}      # name -> what defines it
    for vi in graph.input:
        if vi.name in defined:
            raise OnnxImportError(loc, f"{what} lists input '{vi.name}' twice")
        defined[vi.name] = "a graph input"
    inits = set()
    for t in graph.initializer:
        if t.name in inits:
            raise OnnxImportError(loc, f"{what} has two initializers named '{t.name}'")
        inits.add(t.name)
        defined.setdefault(t.name, "an initializer")
    producer = {o: n for n in graph.node for o in n.output if o}
    for n in graph.node:
        for name in n.input:
            if name and name not in defined and not visible(name):
                later = producer.get(name)
                if later is None:
                    raise OnnxImportError(NameLoc(_name(n)), f"{_describe(n)}: input '{name}' is not defined by "
                                                             f"any earlier node, initializer or graph input")
                raise OnnxImportError(NameLoc(_name(n)), f"{_describe(n)}: input '{name}' is produced by "
                                                         f"{_describe(later)}, which comes later: nodes must be "
                                                         f"in topological order (is there a cycle?)")
        for name in n.output:
            if name in defined:
                raise OnnxImportError(NameLoc(_name(n)), f"{_describe(n)}: output '{name}' is already defined "
                                                         f"by {defined[name]}")
            if name:
                defined[name] = _describe(n)
    seen = set()
    for vi in graph.output:
        if vi.name in seen:
            raise OnnxImportError(loc, f"{what} lists output '{vi.name}' twice")
        seen.add(vi.name)


def _is_constant(v) -> bool:
    d = v.defining_op()
    return d is not None and d.name == "relay.constant"


def _bad_initializer(tensor, problem):
    return OnnxImportError(NameLoc(tensor.name), f"initializer '{tensor.name}' {problem}")


def _op_name(node) -> str:
    """The op type, qualified by its domain outside the default one."""
    from .registry import normalize_domain
    return f"{node.domain}.{node.op_type}" if normalize_domain(node.domain) else node.op_type


def _name(node) -> str:
    return node.name or (node.output[0] if node.output else node.op_type)


def _describe(node) -> str:
    return f"node '{_name(node)}' ({node.op_type})"


def parse_attributes(proto, schema=None) -> dict:
    """AttributeProto list -> {name: Python value}: ints, floats, str,
    tuples of those, TensorProtos for tensors, GraphProtos for graphs.
    With the op's `schema`, attributes it does not declare are left out:
    converters see only what check_node checked."""
    from onnx import AttributeProto as A
    out = {}
    for a in proto.attribute:
        if schema is not None and a.name not in schema.attributes:
            continue
        t = a.type
        if t == A.INT:
            v = int(a.i)
        elif t == A.FLOAT:
            v = float(a.f)
        elif t == A.STRING:
            v = a.s.decode("utf-8", "replace")
        elif t == A.INTS:
            v = tuple(int(x) for x in a.ints)
        elif t == A.FLOATS:
            v = tuple(float(x) for x in a.floats)
        elif t == A.STRINGS:
            v = tuple(s.decode("utf-8", "replace") for s in a.strings)
        elif t == A.TENSOR:
            v = a.t
        elif t == A.GRAPH:
            v = a.g
        elif t == A.GRAPHS:
            v = tuple(a.graphs)
        elif t == A.TENSORS:
            v = tuple(a.tensors)
        else:
            v = a
        out[a.name] = v
    return out
