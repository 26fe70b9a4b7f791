"""The PyTorch frontend: torch.export programs and traced TorchScript into relay.

    from tvmd.frontend.pytorch import from_pytorch
    mod, params = from_pytorch(torch.export.export(model, (x,)))     # ExportedProgram
    mod, params = from_pytorch(model, example_inputs=(x,))           # exported here
    mod, params = from_pytorch(torch.jit.trace(model, x), [("input0", (1, 3, 224, 224))])  # classic TVM

Parameters and buffers become constants inside ``@main`` (params is None).
Dynamic dimensions declared to torch.export (``torch.export.Dim``) become
``?`` dimensions.  An op without a converter, or arguments a converter does
not handle, is a DiagnosticError located at the model's own source line.
``torch`` is an optional dependency, imported only here.
"""

from __future__ import annotations


def from_pytorch(model, input_infos=None, *, example_inputs=None, dynamic_shapes=None):
    """(relay module, params) for `model`: a torch.export.ExportedProgram, a
    traced torch.jit.ScriptModule with `input_infos` ([(name, shape)] or
    [(name, (shape, dtype))], classic TVM's signature), or an nn.Module with
    `example_inputs` (or `input_infos`, from which float32 zeros are made),
    exported here with `dynamic_shapes`."""
    try:
        import torch
    except ImportError:
        raise ImportError("the PyTorch frontend needs torch: pip install 'tvmd[torch]'") from None
    from .exported import import_exported
    from .torchscript import import_torchscript
    if isinstance(model, torch.export.ExportedProgram):
        return import_exported(model)
    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        return import_torchscript(model, input_infos)
    if isinstance(model, torch.nn.Module):
        if example_inputs is None:
            if input_infos is None:
                raise ValueError("from_pytorch(module) needs example_inputs or input_infos to export it")
            example_inputs = tuple(_zeros(spec) for _, spec in input_infos)
        ep = torch.export.export(model.eval(), tuple(example_inputs), dynamic_shapes=dynamic_shapes)
        return import_exported(ep)
    raise TypeError(f"from_pytorch takes an ExportedProgram, a traced ScriptModule or an nn.Module, "
                    f"not {type(model).__name__}")


def _zeros(spec):
    import torch
    if len(spec) == 2 and isinstance(spec[1], (str, torch.dtype)):
        shape, dtype = spec
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    else:
        shape, dtype = spec, torch.float32
    return torch.zeros(tuple(shape), dtype=dtype)
