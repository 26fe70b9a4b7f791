"""torch.export's ExportedProgram into relay (ATen IR, as exported).

    placeholder (parameter / buffer / constant)  -> relay.constant (key: its name)
    placeholder (user input)                      -> a parameter of @main; a
                                                     dynamic dimension (a SymInt) is ``?``
    call_function aten.<op>.<overload>            -> converters.CONVERTERS[op]
    call_function operator.getitem                -> a field of a converter's tuple
    call_function aten.sym_size.int               -> the size, or a SymDim when dynamic
    output                                        -> return (flattened)
"""

from __future__ import annotations

import operator

from .importer import Importer, PyTorchImportError, SymDim, bind, source_loc, to_numpy, torch_type


def import_exported(ep):
    """(relay module, None) for an ExportedProgram."""
    import torch
    from torch.export.graph_signature import InputKind

    from ...ir.location import NameLoc
    # Functionalise: export's graph may mutate views in place (``mask[a:b] =
    # v`` is a slice and a fill_ of it); with no decompositions the ops stay
    # as they are, and a mutation becomes its functional form (slice_scatter).
    if any(n.op == "call_function" and getattr(getattr(n.target, "_schema", None), "is_mutable", False)
           for n in ep.graph.nodes):
        ep = ep.run_decompositions({})
    im = Importer()
    env = {}
    kinds = {s.arg.name: s for s in ep.graph_signature.input_specs}
    consts = dict(ep.state_dict)
    consts.update(getattr(ep, "constants", {}) or {})
    graph = ep.graph_module.graph

    def value_of(a):
        if isinstance(a, torch.fx.Node):
            return env[a]
        if isinstance(a, (list, tuple)):
            return [value_of(x) for x in a]
        return a

    for node in graph.nodes:
        if node.op == "placeholder":
            spec = kinds.get(node.name)
            if spec is not None and spec.kind != InputKind.USER_INPUT:
                t = consts.get(spec.target)
                if t is None:
                    raise PyTorchImportError(NameLoc(node.name), f"no value for {spec.kind.name.lower()} "
                                                                 f"'{spec.target}' in the exported program")
                env[node] = im.constant(to_numpy(t), spec.target)
                continue
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise PyTorchImportError(NameLoc(node.name), f"input '{node.name}' is not a tensor ({type(val).__name__})")
            shape = [d if isinstance(d, int) else None for d in val.shape]
            env[node] = im.add_input(node.name, shape, torch_type(val.dtype))
        elif node.op == "call_function":
            loc, source = source_loc(node.meta.get("stack_trace"), node.name)
            target = node.target
            if target is operator.getitem:
                env[node] = value_of(node.args[0])[node.args[1]]
                continue
            schema = getattr(target, "_schema", None)
            if schema is None:
                raise PyTorchImportError(loc, f"{getattr(target, '__name__', target)}"
                                              f"{' (' + source + ')' if source else ''}: unsupported: "
                                              "a call that is not an ATen op")
            name = schema.name.split("::", 1)[1]
            if name == "sym_size":
                x, d = value_of(node.args[0]), node.args[1]
                n = x.type.shape[d]
                env[node] = SymDim(x, d) if n is None else n
                continue
            values = bind(schema, node.args, node.kwargs, value_of)
            env[node] = im.call(name, schema, values, loc, source)
        elif node.op == "output":
            return im.finish(value_of(node.args[0]), NameLoc("output")), None
        else:
            raise PyTorchImportError(NameLoc(node.name), f"unsupported graph node kind '{node.op}'")
    raise PyTorchImportError(NameLoc("graph"), "the exported graph has no output")

