"""The ONNX frontend: an ONNX model -> a relay module.

    from tvmd.frontend.onnx import from_onnx
    module, params = from_onnx(onnx.load("model.onnx"))
    print(tvmd.ir.printer.print_module(module))    # weights in the resource section

or from the command line: ``tvm-translate --import-onnx model.onnx -o model.relay``.

The package:

    importer.py      graph -> @main: inputs, initializers, nodes, outputs
    context.py       the Node a converter reads and the context it emits relay with
    registry.py      converters by op type and opset version
    converters/      one converter per ONNX op, in modules by family
    functions.py     ops ONNX defines by a function body, expanded
    symbolic.py      reshape targets computed from dynamic shapes
    dtypes.py        ONNX element types <-> tvmd types
    errors.py        UnsupportedOpError and friends (DiagnosticErrors at the node)

numpy and onnx are imported when a model is converted, never on import.
"""

from __future__ import annotations

from .errors import OnnxImportError, StaticValueRequired, UnsupportedOpError  # noqa: F401


def load_model(model):
    """A ModelProto from a ModelProto, a path or serialized bytes; an
    empty file is an OnnxImportError (onnx reads it as an empty model)."""
    import os
    if isinstance(model, (str, os.PathLike)):
        import onnx
        if os.path.isfile(model) and os.path.getsize(model) == 0:
            from ...ir.location import UNKNOWN
            raise OnnxImportError(UNKNOWN, f"'{os.fspath(model)}' is not an ONNX model: empty file")
        return onnx.load(os.fspath(model))
    if isinstance(model, (bytes, bytearray)):
        import onnx
        if not model:
            from ...ir.location import UNKNOWN
            raise OnnxImportError(UNKNOWN, "not an ONNX model: no bytes")
        return onnx.load_from_string(bytes(model))
    return model


def from_onnx(model, shape=None, dtype=None, opset=None, *, freeze_params=True, input_values=None):
    """Convert an ONNX model to a relay module with one function, ``@main``.

    shape         {input name: shape} overriding the model's input shapes
                  (None or -1 for a dynamic dimension, printed ``?``)
    dtype         a dtype name for inputs the model leaves untyped, or
                  {input name: dtype} overriding the model's
    opset         the default-domain opset to convert as (default: the model's)
    freeze_params True (default): initializers become constants inside @main;
                  False: they become parameters after the inputs, returned in
                  `params` as numpy arrays
    input_values  {input name: array} that converters may read at import time
                  where relay needs a value ONNX computes (a Reshape's shape
                  fed by a graph input); the input stays a parameter

    Returns ``(module, params)``: `params` is None with frozen parameters.
    Raises UnsupportedOpError for what the importer cannot convert (an op
    type without a converter, an attribute value or dtype a converter does
    not handle) and OnnxImportError for a broken model, both located at the
    ONNX node.
    """
    from .importer import GraphImporter
    imp = GraphImporter(load_model(model), shape, dtype, opset, freeze_params, input_values)
    return imp.run()


def supported_ops():
    """{op type: [schema versions with a converter]} for the default domain."""
    from .registry import supported_ops as ops
    return ops()
