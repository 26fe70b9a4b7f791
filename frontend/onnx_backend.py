"""The ONNX backend interface (``onnx.backend.base.Backend``) over tvmd.

    import tvmd.frontend.onnx_backend as backend
    rep = backend.prepare(model, "CPU")
    outputs = rep.run([x])                 # or a {name: array} dict
    outputs = backend.run_model(model, [x])

A model is imported to relay (``from_onnx``) and run by an executor chosen
by `mode`: "interpreter" (the relay reference interpreter, the only one
today); a later issue adds compiled execution under another name in
``EXECUTORS``.

Relay wants some values ONNX computes -- a Reshape's target shape, Slice's
bounds, a Range's limits -- at import time.  When such a value comes from
a graph input, the model can only be imported once that input's value is
known: ``run`` imports per input signature (shapes and dtypes), binding
the values of the inputs the converters read, and imports again if one of
those values changes.  ``prepare`` imports straight away when the model's
declared inputs allow it, so an unsupported op shows up there.
"""

from __future__ import annotations

from onnx.backend.base import Backend, BackendRep, namedtupledict

from .onnx import StaticValueRequired, UnsupportedOpError, load_model


class InterpreterExecutor:
    """Runs @main of a relay module with the reference interpreter."""

    def __init__(self, module):
        self.module = module

    def __call__(self, arrays):
        from ..dialects.relay.interpreter import run_function
        out = run_function(self.module, "main", *arrays)
        return list(out) if isinstance(out, tuple) else [out]


EXECUTORS = {"interpreter": InterpreterExecutor}
DEFAULT_MODE = "interpreter"


class _Import:
    """One imported module: the executor, and the values of the graph inputs
    the import read (it is only valid for those values)."""

    __slots__ = ("run", "module", "read")

    def __init__(self, run, module, read):
        self.run = run
        self.module = module
        self.read = read      # {input name: array}


class TvmdBackendRep(BackendRep):
    def __init__(self, model, mode=DEFAULT_MODE, **import_options):
        if mode not in EXECUTORS:
            raise ValueError(f"unknown mode '{mode}'; expected one of {', '.join(EXECUTORS)}")
        self.model = model
        self.mode = mode
        self.options = import_options
        inits = {t.name for t in model.graph.initializer}
        self.inputs = [vi for vi in model.graph.input if vi.name not in inits]
        self.output_names = [vi.name for vi in model.graph.output]
        self._imports: dict = {}

    # -- importing ---------------------------------------------------------------

    def _import(self, shapes, values=None):
        from .onnx.importer import GraphImporter
        imp = GraphImporter(self.model, shape=shapes, input_values=values, **self.options)
        module, _ = imp.run()
        read = {name: values[name] for name in imp.bound_used} if values else {}
        return _Import(EXECUTORS[self.mode](module), module, read)

    def try_declared(self):
        """Import with the model's declared input shapes; None when that
        needs input values or the shapes are dynamic.  Unsupported ops raise."""
        from .onnx.dtypes import value_info_type
        from .onnx.importer import GraphImporter
        GraphImporter(self.model, **self.options).check_supported()
        shapes = {}
        for vi in self.inputs:
            info = value_info_type(vi)
            if info is None or info[1] is None or None in info[1]:
                return None
            shapes[vi.name] = info[1]
        try:
            imp = self._import(shapes)
        except UnsupportedOpError:
            raise
        except StaticValueRequired:
            return None
        self._imports[self._key_of_shapes(shapes)] = imp
        return imp

    def _key_of_shapes(self, shapes):
        return tuple((name, tuple(shapes[name])) for name in sorted(shapes))

    # -- running -------------------------------------------------------------------

    def run(self, inputs, **kwargs):
        arrays = self._arrays(inputs)
        shapes = {vi.name: a.shape for vi, a in zip(self.inputs, arrays) if hasattr(a, "shape")}
        key = self._key_of_shapes(shapes)
        imp = self._imports.get(key)
        values = {vi.name: a for vi, a in zip(self.inputs, arrays)}
        if imp is None or not _same_values(imp.read, values):
            imp = self._import(shapes, values)
            self._imports[key] = imp
        outs = imp.run(arrays)
        return namedtupledict("Outputs", self.output_names)(*outs)

    def _arrays(self, inputs):
        import numpy as np
        if isinstance(inputs, dict):
            missing = [vi.name for vi in self.inputs if vi.name not in inputs]
            if missing:
                raise ValueError(f"missing inputs: {', '.join(missing)}")
            inputs = [inputs[vi.name] for vi in self.inputs]
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            raise ValueError(f"the model takes {len(self.inputs)} input(s), got {len(inputs)}")
        # a sequence or optional input stays as given: the import reports
        # the nodes reading it as unsupported
        return [np.asarray(a) if vi.type.HasField("tensor_type") else a for vi, a in zip(self.inputs, inputs)]


def _same_values(read, values):
    import numpy as np
    for name, arr in read.items():
        v = values.get(name)
        if v is None or v.shape != arr.shape or v.dtype != arr.dtype or not np.array_equal(v, arr):
            return False
    return True


class TvmdBackend(Backend):
    """``prepare(model, device="CPU", mode="interpreter", **from_onnx options)``."""

    @classmethod
    def prepare(cls, model, device="CPU", mode=DEFAULT_MODE, **kwargs):
        if not cls.supports_device(device):
            raise ValueError(f"tvmd's ONNX backend runs on CPU, not '{device}'")
        rep = TvmdBackendRep(load_model(model), mode, **_import_options(kwargs))
        rep.try_declared()
        return rep

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Run one node: a model around it, typed from the inputs given."""
        import numpy as np
        from onnx import helper

        from .onnx.dtypes import to_onnx
        from ..ir.types import from_numpy_dtype
        arrays = [np.asarray(a) for a in (inputs.values() if isinstance(inputs, dict) else inputs)]
        names = [n for n in node.input if n]
        vis = [helper.make_tensor_value_info(n, to_onnx(from_numpy_dtype(a.dtype)), a.shape)
               for n, a in zip(names, arrays)]
        outs = [helper.make_empty_tensor_value_info(n) for n in node.output if n]
        opset = kwargs.pop("opset_version", None)
        opsets = [helper.make_opsetid("", opset)] if opset else None
        model = helper.make_model(helper.make_graph([node], "run_node", vis, outs), opset_imports=opsets)
        return cls.run_model(model, arrays, device, **kwargs)

    @classmethod
    def supports_device(cls, device):
        return str(device).split(":")[0].upper() == "CPU"


def _import_options(kwargs):
    """The from_onnx options among prepare's keyword arguments (the test
    runner passes tolerances, which are not ours)."""
    return {k: kwargs[k] for k in ("opset", "dtype", "freeze_params") if k in kwargs}


prepare = TvmdBackend.prepare
run_model = TvmdBackend.run_model
run_node = TvmdBackend.run_node
supports_device = TvmdBackend.supports_device
