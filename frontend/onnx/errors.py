"""Errors the ONNX importer raises.

Every error is a :class:`DiagnosticError` located at the ONNX node (a
``NameLoc`` with the node's name), so the tools print it like any other
diagnostic.  :class:`UnsupportedOpError` marks what the importer cannot
translate *yet* -- an op type with no converter, an attribute value or a
data type a converter does not handle, a relay op that is missing -- as
opposed to a broken model.  The ONNX backend test suite skips exactly those
cases, grouped by ``op_type``.
"""

from __future__ import annotations

from ...ir.diagnostics import DiagnosticError


class OnnxImportError(DiagnosticError):
    """A model the importer cannot turn into relay (a user error)."""


class UnsupportedOpError(OnnxImportError):
    """Something the importer does not support; `op_types` are the ONNX op
    types responsible (one for a converter limit, all of them when several
    op types have no converter), `detail` says what is missing."""

    def __init__(self, loc, message, op_types, detail="", notes=()):
        super().__init__(loc, message, notes)
        self.op_types = tuple(op_types)
        self.detail = detail

    @property
    def op_type(self) -> str:
        return self.op_types[0]


class StaticValueRequired(OnnxImportError):
    """A converter needs a tensor's value at import time (a shape, axes,
    pads ...) and the tensor is computed at run time.  The backend binds the
    graph input values and retries; `input_name` is set when the value is a
    graph input, which is what it binds."""

    def __init__(self, loc, message, input_name=None):
        super().__init__(loc, message)
        self.input_name = input_name


class UseFunctionBody(Exception):
    """Raised by a converter, before it emits anything, for a form of its op
    it leaves to the op's ONNX function body (the importer expands the
    node instead): `why` is said once, in one line, as any fallback is."""

    def __init__(self, why):
        super().__init__(why)
        self.why = why
