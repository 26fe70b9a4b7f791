"""Traced TorchScript (``torch.jit.trace``) into relay, as classic TVM's
``relay.frontend.from_pytorch(traced, [("input0", (1, 3, 224, 224))])``.

The module is frozen first (``torch.jit.freeze``: weights become
constants, submodule calls are inlined), then read node by node::

    prim::Constant                 -> a Python value, or a relay.constant for a tensor
    prim::ListConstruct / Tuple... -> a Python list / tuple of values
    prim::ListUnpack / TupleUnpack -> its fields
    aten::<op>                     -> converters.CONVERTERS[op], arguments bound by the
                                      node's schema
    prim::NumToTensor, aten::Int   -> the number itself (sizes stay Python ints)
"""

from __future__ import annotations

import warnings

from .importer import Importer, PyTorchImportError, bind, source_loc, to_numpy, torch_type


def import_torchscript(module, input_infos):
    """(relay module, None) for a traced ScriptModule and [(name, shape) or
    (name, (shape, dtype))] for its inputs, in order."""
    import torch

    from ...ir.location import NameLoc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.jit.freeze's deprecation notice
        frozen = torch.jit.freeze(module.eval()) if isinstance(module, torch.jit.ScriptModule) else module
    graph = frozen.graph
    im = Importer()
    env = {}
    inputs = [i for i in graph.inputs() if not isinstance(i.type(), torch._C.ClassType)]
    if input_infos is None or len(input_infos) != len(inputs):
        raise PyTorchImportError(NameLoc("graph"), f"the traced module takes {len(inputs)} input(s); give one "
                                                   f"(name, shape) for each (got {len(input_infos or [])})")
    for i, info in zip(inputs, input_infos):
        name, spec = info
        shape, dtype = (spec if len(spec) == 2 and isinstance(spec[1], (str, torch.dtype)) else (spec, "float32"))
        dt = torch_type(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
        env[i] = im.add_input(name, [None if d is None or d == -1 else int(d) for d in shape], dt)

    def value_of(v):
        return env[v]

    for node in graph.nodes():
        kind = node.kind()
        outs = list(node.outputs())
        if kind == "prim::Constant":
            val = outs[0].toIValue()
            if isinstance(val, torch.Tensor):
                val = im.constant(to_numpy(val), outs[0].debugName())
            elif isinstance(val, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in val):
                val = [im.constant(to_numpy(t), f"{outs[0].debugName()}_{k}") for k, t in enumerate(val)]
            env[outs[0]] = val
        elif kind in ("prim::ListConstruct", "prim::TupleConstruct"):
            env[outs[0]] = [value_of(i) for i in node.inputs()]
        elif kind in ("prim::ListUnpack", "prim::TupleUnpack"):
            for o, v in zip(outs, value_of(node.input())):
                env[o] = v
        elif kind in ("prim::NumToTensor", "aten::Int", "aten::Float", "aten::ScalarImplicit"):
            env[outs[0]] = value_of(node.input())
        elif kind.startswith("aten::"):
            loc, source = source_loc(node.sourceRange(), outs[0].debugName() if outs else kind)
            sch = node.schema()
            name = kind[len("aten::"):]
            if sch == "(no schema)":
                raise PyTorchImportError(loc, f"{kind}{' (' + source + ')' if source else ''}: unsupported: "
                                              "an op without a schema")
            schema = torch._C.parse_schema(sch)
            if schema.is_mutable and _mutates_a_view(node, schema):
                raise PyTorchImportError(loc, f"{kind}{' (' + source + ')' if source else ''}: unsupported: "
                                              "an in-place update of a view (of a slice or a reshape); "
                                              "import the model through torch.export, which makes it functional")
            values = bind(schema, [value_of(i) for i in node.inputs()], {}, lambda x: x, all_positional=True)
            res = im.call(name, schema, values, loc, source)
            if len(outs) == 1:
                env[outs[0]] = res
            else:
                for o, v in zip(outs, res):
                    env[o] = v
        else:
            loc, source = source_loc(node.sourceRange(), kind)
            raise PyTorchImportError(loc, f"{kind}{' (' + source + ')' if source else ''}: unsupported: "
                                          "a TorchScript node the importer does not read")
    return im.finish([value_of(o) for o in graph.outputs()], NameLoc("output")), None


_VIEWS = {"aten::slice", "aten::select", "aten::view", "aten::reshape", "aten::narrow", "aten::as_strided",
          "aten::expand", "aten::transpose", "aten::permute", "aten::unsqueeze", "aten::squeeze",
          "aten::flatten", "aten::t", "aten::diagonal", "aten::unfold", "aten::__getitem__"}


def _mutates_a_view(node, schema):
    """Whether `node` writes into an argument that is a view of another
    tensor: converted as a new value, the write would not reach the base."""
    for arg, v in zip(schema.arguments, node.inputs()):
        info = arg.alias_info
        if info is not None and info.is_write and v.node().kind() in _VIEWS:
            return True
    return False
