"""Read a PyTorch program into relay: torch.export graphs and traced
TorchScript, node by node, through the one ATen table (converters.py).

Each node becomes a call of its converter with the arguments bound by
the op's schema (name -> value, the schema's defaults filled in).  A
node's location is the model's own source line that made it (the first
frame of its stack trace outside torch itself), so an error reads
``model.py:12:9: error: aten::fft_fft: unsupported: no converter``.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...ir import types as T
from ...ir.diagnostics import DiagnosticError
from ...ir.location import FileLoc, NameLoc
from .converters import CONVERTERS, Args


class PyTorchImportError(DiagnosticError):
    """A PyTorch program the importer cannot turn into relay."""


class SymDim:
    """A dimension known only at run time: dimension `axis` of `value`
    (``x.size(1)`` of a dynamic axis).  A view may pass it through."""

    __slots__ = ("value", "axis")

    def __init__(self, value, axis):
        self.value, self.axis = value, axis


class AtenNode:
    """What the ONNX ConvertContext reports errors against (duck-typed)."""

    __slots__ = ("op_type", "loc", "inputs", "proto", "source")

    def __init__(self, op_type, loc, source):
        self.op_type, self.loc, self.source, self.inputs, self.proto = op_type, loc, source, [], None

    def describe(self):
        return f"{self.op_type}" + (f" ({self.source})" if self.source else "")


_FX_FRAME = re.compile(r'File "([^"]+)", line (\d+)')          # outermost first
_TS_FRAME = re.compile(r"^(\S.*?)\((\d+)\): \S+$", re.MULTILINE)   # innermost first


def _in_torch(path):
    return f"{os.sep}torch{os.sep}" in path or f"{os.sep}site-packages{os.sep}" in path


def source_loc(trace, fallback):
    """(FileLoc of the model's own line, "file.py:N") from a node's stack
    trace (torch.export's, outermost frame first, or TorchScript's source
    range, innermost first): the innermost frame that is not in torch."""
    frames = [(m.group(1), int(m.group(2))) for m in _FX_FRAME.finditer(trace or "")]
    if not frames:
        frames = [(m.group(1), int(m.group(2))) for m in _TS_FRAME.finditer(trace or "")][::-1]
    # the model's own file first; else a library's model code (torchvision's),
    # never torch's internals
    mine = [f for f in frames if not _in_torch(f[0])] or \
        [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]]
    if not mine:
        return NameLoc(fallback), ""
    path, line = mine[-1]
    col = 1
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().splitlines()[line - 1]
        col = len(text) - len(text.lstrip()) + 1
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    return FileLoc(path, line, col), f"{os.path.basename(path)}:{line}"


class Importer:
    """Builds relay.func @main from a stream of ATen calls."""

    def __init__(self):
        from ...ir.builder import Builder
        from ...ir.core import Block
        from ..onnx.context import ConvertContext
        self.block = Block()
        self.cx = ConvertContext(Builder.at_end(self.block))
        self.params = {}

    def add_input(self, name, shape, dtype):
        return self.block.add_arg(T.TensorType(tuple(shape), dtype), _identifier(name))

    def constant(self, array, name):
        arr = np.ascontiguousarray(array)
        return self.cx.const(arr, key=_identifier(name) if arr.size > 16 else None)

    def call(self, op_name, schema_args, values, loc, source):
        """Convert one ATen call; `values` are its arguments by schema name."""
        cx = self.cx
        cx.node = AtenNode(f"aten::{op_name}", loc, source)
        cx.builder.loc = loc
        fn = CONVERTERS.get(op_name)
        if fn is None:
            raise cx.unsupported(f"no converter for ATen op '{op_name}' (tvmd.frontend.pytorch.converters)")
        a = Args(values)
        a.op_name = op_name
        try:
            return fn(cx, a)
        except DiagnosticError:
            raise
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise cx.unsupported(f"arguments the converter does not handle ({type(e).__name__}: {e})") from None

    def finish(self, outputs, loc):
        from ...dialects.builtin.ops import ModuleOp
        from ...dialects.relay.ops.function import FuncOp, ReturnOp
        from ...dialects.relay.passes.dce import erase_dead_ops
        from ...ir.core import Region, Value
        from ...ir.verifier import verify
        flat = []
        for v in _flatten(outputs):
            if not isinstance(v, Value):
                raise PyTorchImportError(loc, f"the model returns a {type(v).__name__}, not a tensor")
            flat.append(v)
        self.block.append(ReturnOp(flat, (), None, (), loc))
        erase_dead_ops(self.block, None)
        ft = T.FunctionType([a.type for a in self.block.args], [v.type for v in flat])
        func = FuncOp((), (), {"sym_name": "main", "function_type": ft}, [Region([self.block])], loc)
        module = ModuleOp.create_empty()
        module.body.append(func)
        verify(module)
        return module


def _flatten(v):
    """The values of nested lists / tuples, in order (a model's outputs)."""
    if isinstance(v, (list, tuple)):
        for x in v:
            yield from _flatten(x)
    else:
        yield v


def _identifier(name):
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name))
    return s if s and not s[0].isdigit() else "v" + s


def bind(schema, args, kwargs, convert, all_positional=False):
    """{argument name: converted value} for a call of `schema`
    (TorchScript passes even keyword-only arguments by position)."""
    out = {}
    for i, arg in enumerate(schema.arguments):
        if (all_positional or not arg.kwarg_only) and i < len(args):
            out[arg.name] = convert(args[i])
        elif arg.name in kwargs:
            out[arg.name] = convert(kwargs[arg.name])
        elif arg.has_default_value():
            out[arg.name] = arg.default_value
    return out


def torch_type(dtype):
    """The tvmd type of a torch.dtype."""
    name = str(dtype).replace("torch.", "")
    if name == "bfloat16":
        return T.bf16
    if name == "bool":
        return T.i1
    return T.from_numpy_dtype(np.dtype(name))


def to_numpy(t):
    import torch
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.contiguous().numpy()
