"""``relay.frontend``: from_onnx and from_pytorch with classic TVM's signatures,
returning ``(IRModule, params)``."""

from __future__ import annotations


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=False, convert_config=None):
    """Initializers become ``params`` (parameters of @main that relay.build
    binds) unless `freeze_params`, as in TVM."""
    from ...frontend.onnx import from_onnx as tvmd_from_onnx
    from ..build import IRModule
    from ..nd import array
    module, params = tvmd_from_onnx(model, shape=shape, dtype=dtype, opset=opset, freeze_params=freeze_params)
    return IRModule(module), {k: array(v) for k, v in (params or {}).items()}


def from_pytorch(script_module, input_infos, custom_convert_map=None, default_dtype="float32", **kw):
    """A traced ScriptModule (or an ExportedProgram / nn.Module) and
    [(name, shape)]; the weights are constants inside @main (params is empty)."""
    from ...frontend.pytorch import from_pytorch as tvmd_from_pytorch
    from ..build import IRModule
    module, _ = tvmd_from_pytorch(script_module, input_infos)
    return IRModule(module), {}
