"""Ops defined as ONNX functions, converted through their bodies.

Many newer ONNX ops (Attention, RotaryEmbedding, the loss functions,
SwiGLU ...) come with a function body in their schema -- fixed, or built
for the node's attributes and input types (a context-dependent function)
-- and a model may define its own functions (``model.functions``).  An op
with no converter is expanded into its body's nodes, which are converted
one by one.  Inside, tensor names take a per-call prefix, attribute
references (``ref_attr_name``) take the caller's values or the schema's
defaults, and nodes use the function's own opsets.
"""

from __future__ import annotations


def local_functions(model) -> dict:
    """(domain, name) -> FunctionProto for the model's own functions."""
    return {(f.domain, f.name): f for f in model.functions}


def schema_of(domain, op_type, opset):
    import onnx.defs
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


def has_body(importer, proto) -> bool:
    """Whether `proto` can be expanded (before knowing its input types)."""
    from .registry import normalize_domain
    domain = normalize_domain(proto.domain)
    if (proto.domain, proto.op_type) in importer.functions:
        return True
    s = schema_of(domain, proto.op_type, importer.opsets.get(domain, 1))
    return s is not None and (s.has_function or s.has_context_dependent_function)


def function_body(functions, proto, domain, input_types, opsets):
    """(FunctionProto, schema attribute defaults) that `proto` expands to,
    or (None, {}): a model function from `functions`, else the schema's
    body at `opsets`.  `input_types` are TypeProtos of its inputs
    (context-dependent bodies depend on them)."""
    from onnx import FunctionProto
    local = functions.get((proto.domain, proto.op_type))
    if local is not None:
        return local, {}
    opset = opsets.get(domain, 1)
    s = schema_of(domain, proto.op_type, opset)
    if s is None:
        return None, {}
    defaults = {name: a.default_value for name, a in s.attributes.items()
                if a.default_value and a.default_value.name}
    f = FunctionProto()
    fixed = [v for v in s.function_opset_versions if v <= opset]
    if fixed:
        f.ParseFromString(s.get_function_with_opset_version(max(fixed)))
        return f, defaults
    dep = [v for v in s.context_dependent_function_opset_versions if v <= opset]
    if dep:
        node = _with_defaults(proto, defaults)
        f.ParseFromString(s.get_context_dependent_function_with_opset_version(
            max(dep), node.SerializeToString(), [t.SerializeToString() for t in input_types]))
        return f, defaults
    return None, {}


def _with_defaults(proto, defaults):
    from onnx import NodeProto
    node = NodeProto()
    node.CopyFrom(proto)
    have = {a.name for a in node.attribute}
    for name, a in defaults.items():
        if name not in have:
            node.attribute.append(a)
    return node


def type_proto(t):
    """An ONNX TypeProto for a relay tensor type (unknown for anything else)."""
    from onnx import TypeProto, helper

    from ...ir.types import TensorType
    from .dtypes import to_onnx
    if not isinstance(t, TensorType):
        return TypeProto()
    elem = to_onnx(t.element_type) or 0
    return helper.make_tensor_type_proto(elem, list(t.shape))


def expand(proto, fproto, defaults, prefix):
    """NodeProtos of `fproto`'s body bound to `proto`'s inputs, outputs
    and attributes; inner tensors renamed under `prefix`, also where
    subgraphs of the body read them."""
    from onnx import AttributeProto, NodeProto
    names = {}
    for formal, actual in zip(fproto.input, proto.input):
        names[formal] = actual
    for formal in list(fproto.input)[len(proto.input):]:
        names[formal] = ""
    for formal, actual in zip(fproto.output, proto.output):
        names[formal] = actual
    caller = {a.name: a for a in proto.attribute}
    own_defaults = {a.name: a for a in fproto.attribute_proto}

    def rename(n):
        if n == "":
            return ""
        if n not in names:
            names[n] = prefix + n
        return names[n]

    nodes = []
    for inner in fproto.node:
        node = NodeProto()
        node.op_type = inner.op_type
        node.domain = inner.domain
        node.name = prefix + (inner.name or inner.op_type)
        node.input.extend(rename(n) for n in inner.input)
        node.output.extend(rename(n) for n in inner.output)
        for a in inner.attribute:
            if a.ref_attr_name:
                src = caller.get(a.ref_attr_name) or own_defaults.get(a.ref_attr_name) \
                    or defaults.get(a.ref_attr_name)
                if src is None:
                    continue        # an optional attribute the caller left out
                b = node.attribute.add()
                b.CopyFrom(src)
                b.name = a.name
            else:
                b = node.attribute.add()
                b.CopyFrom(a)
                # a subgraph (a loop body) reads the function's tensors by their renamed names
                if a.type == AttributeProto.GRAPH:
                    b.g.CopyFrom(_rename_outer(a.g, rename))
                elif a.type == AttributeProto.GRAPHS:
                    for g in b.graphs:
                        g.CopyFrom(_rename_outer(g, rename))
        nodes.append(node)
    return nodes


def _rename_outer(graph, rename):
    """A copy of `graph` whose references to names it does not define
    itself go through `rename` (nested subgraphs too)."""
    from onnx import AttributeProto, GraphProto
    g = GraphProto()
    g.CopyFrom(graph)
    local = {vi.name for vi in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}

    def outer(name):
        return name if name == "" or name in local else rename(name)
    for n in g.node:
        n.input[:] = [outer(x) for x in n.input]
        for a in n.attribute:
            if a.type == AttributeProto.GRAPH:
                a.g.CopyFrom(_rename_outer(a.g, outer))
            elif a.type == AttributeProto.GRAPHS:
                for sg in a.graphs:
                    sg.CopyFrom(_rename_outer(sg, outer))
    for o in g.output:
        o.name = outer(o.name)
    return g
