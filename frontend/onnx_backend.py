"""The ONNX backend interface (``onnx.backend.base.Backend``) over tvmd.

    import tvmd.frontend.onnx_backend as backend
    rep = backend.prepare(model, "CPU")
    outputs = rep.run([x])                 # or a {name: array} dict
    outputs = backend.run_model(model, [x])

A model is imported to relay (``from_onnx``) and run by an executor chosen
by `mode`: "compiled" (the default: ``tvmd.runtime.build`` compiles the
module once per import -- graph passes, kernels lowered to TIR, LLVM JIT --
and every ``run`` executes it; kernels without a TE compute and graphs with
control flow run on the ops' numpy reference) or "interpreter" (the relay
reference interpreter, nothing compiled).

Relay wants some values ONNX computes -- a Reshape's target shape, Slice's
bounds, a Range's limits -- at import time.  When such a value comes from
a graph input, the model can only be imported once that input's value is
known: ``run`` imports per input signature (shapes and dtypes), binding
the values of the inputs the converters read, and imports again if one of
those values changes.  ``prepare`` imports straight away when the model's
declared inputs allow it, so an unsupported op shows up there.

Declared dynamic dimensions (``dim_param``, a sequence length) stay
dynamic: ``prepare`` imports and builds the model once with ``?`` in their
place, and that one build serves every input whose static dimensions
match (``rep.builds`` counts the builds).  When the dynamic import needs
an input's value or a converter cannot keep a dimension dynamic, or a run
meets sizes the dynamic kernels cannot take (a ``?`` of 1 broadcasting),
it says so once and imports per input signature as above.
"""

from __future__ import annotations

from onnx.backend.base import Backend, BackendRep, namedtupledict

from .onnx import StaticValueRequired, load_model


class InterpreterExecutor:
    """Runs @main of a relay module with the reference interpreter."""

    def __init__(self, module, **options):
        self.module = module

    def __call__(self, arrays):
        from ..dialects.relay.interpreter import Interpreter
        interp = Interpreter(self.module)
        results = interp.call(interp.functions["main"], list(arrays), None)
        # a tuple result is an ONNX sequence: a list, as onnxruntime gives it
        return [list(r) if isinstance(r, tuple) else r for r in results]


class CompiledExecutor:
    """Compiles @main once (runtime/build.py); each call runs the compiled model."""

    def __init__(self, module, **options):
        from ..runtime.build import build
        self.module = module
        self.compiled = build(module, progress=False, **options)

    def __call__(self, arrays):
        import numpy as np
        results = self.compiled.run_list(*[np.asarray(a) if not isinstance(a, list) else a for a in arrays])
        return [list(r) if isinstance(r, tuple) else r for r in results]


EXECUTORS = {"compiled": CompiledExecutor, "interpreter": InterpreterExecutor}
DEFAULT_MODE = "compiled"


class _Import:
    """One imported module: the executor, and the values of the graph inputs
    the import read (it is only valid for those values)."""

    __slots__ = ("run", "module", "read", "params")

    def __init__(self, run, module, read, params):
        self.run = run
        self.module = module
        self.read = read      # {input name: array}
        self.params = params  # the inputs @main takes (an empty optional takes none)


class TvmdBackendRep(BackendRep):
    def __init__(self, model, mode=DEFAULT_MODE, compile_options=None, **import_options):
        if mode not in EXECUTORS:
            raise ValueError(f"unknown mode '{mode}'; expected one of {', '.join(EXECUTORS)}")
        self.model = model
        self.mode = mode
        self.compile_options = dict(compile_options or {})
        self.options = import_options
        inits = {t.name for t in model.graph.initializer}
        self.inputs = [vi for vi in model.graph.input if vi.name not in inits]
        self.output_names = [vi.name for vi in model.graph.output]
        # bf16 crosses tvmd's runtime as its bits (uint16); ONNX's arrays are ml_dtypes' bfloat16
        self._bf16_outputs = {k for k, vi in enumerate(model.graph.output)
                              if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type == 16}
        self._imports: dict = {}
        self._dynamic = None      # the one import of a model with dynamic dimensions
        self._declared = None     # its declared input shapes (None: '?')
        self.builds = 0           # imports (each one build)
        # the results' type, made once: namedtuple builds a class with eval (0.1 ms a step)
        self._outputs = namedtupledict("Outputs", self.output_names)
        self._said_mismatch = False

    # -- importing ---------------------------------------------------------------

    def _import(self, shapes, values=None):
        from .onnx.importer import GraphImporter
        imp = GraphImporter(self.model, shape=shapes, input_values=values, **self.options)
        module, _ = imp.run()
        self.builds += 1
        read = {name: values[name] for name in imp.bound_used} if values else {}
        return _Import(EXECUTORS[self.mode](module, **self.compile_options), module, read, imp.param_inputs)

    def try_declared(self):
        """Import with the model's declared input shapes; None when that
        needs input values, or the inputs are dynamic or not tensors (a
        sequence is typed from its value).  Unsupported op types raise."""
        from .onnx.dtypes import value_info_type
        from .onnx.importer import GraphImporter
        shapes = {}
        for vi in self.inputs:
            info = value_info_type(vi)
            if info is None or info[1] is None:
                GraphImporter(self.model, **self.options).check_supported()
                return None
            shapes[vi.name] = tuple(info[1])
        if any(None in s for s in shapes.values()):
            return self._try_dynamic(shapes)
        try:
            imp = self._import(shapes)
        except StaticValueRequired:
            return None
        self._imports[_signature(shapes.items())] = imp
        return imp

    def _try_dynamic(self, shapes):
        """One import and build with the declared '?' dimensions; None (said
        once) when the import needs static sizes."""
        from .onnx.errors import OnnxImportError
        from .onnx.importer import GraphImporter
        GraphImporter(self.model, **self.options).check_supported()
        try:
            imp = self._import(shapes)
        except OnnxImportError as e:
            _say(f"the model's dynamic dimensions are imported per input shape: {_first_line(e)}")
            return None
        self._dynamic, self._declared = imp, shapes
        return imp

    def _fits_declared(self, arrays):
        return all(hasattr(a, "shape") and len(a.shape) == len(self._declared[vi.name])
                   and all(d is None or d == n for d, n in zip(self._declared[vi.name], a.shape))
                   for vi, a in zip(self.inputs, arrays))

    # -- running -------------------------------------------------------------------

    def run(self, inputs, **kwargs):
        from ..runtime.dynamic import SizeMismatch
        arrays = self._arrays(inputs)
        if self._dynamic is not None and self._fits_declared(arrays):
            values = {vi.name: a for vi, a in zip(self.inputs, arrays)}
            try:
                outs = self._dynamic.run([_bits_of_bf16(values[name]) for name in self._dynamic.params])
                return self._outputs(*self._onnx_arrays(outs))
            except SizeMismatch as e:
                if not self._said_mismatch:
                    _say(f"input sizes the dynamic build cannot take are built on their own: {e}")
                    self._said_mismatch = True
        shapes = {vi.name: a.shape for vi, a in zip(self.inputs, arrays) if hasattr(a, "shape")}
        key = _signature((vi.name, a) for vi, a in zip(self.inputs, arrays))
        imp = self._imports.get(key)
        values = {vi.name: a for vi, a in zip(self.inputs, arrays)}
        if imp is None or not _same_values(imp.read, values):
            imp = self._import(shapes, values)
            self._imports[key] = imp
        outs = imp.run([_bits_of_bf16(values[name]) for name in imp.params])
        return self._outputs(*self._onnx_arrays(outs))

    def _onnx_arrays(self, outs):
        """bf16 outputs (bits) as ml_dtypes' bfloat16, the dtype ONNX's arrays have."""
        if not self._bf16_outputs:
            return outs
        import ml_dtypes
        return [o.view(ml_dtypes.bfloat16) if k in self._bf16_outputs and hasattr(o, "view") else o
                for k, o in enumerate(outs)]

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
        # a sequence is a list of arrays; an optional may be None
        return [np.asarray(a) if vi.type.HasField("tensor_type") else
                [np.asarray(x) for x in a] if isinstance(a, (list, tuple)) else a
                for vi, a in zip(self.inputs, inputs)]


def _bits_of_bf16(a):
    """An ml_dtypes bfloat16 array as its bits (uint16), the form tvmd's
    runtime takes (a sequence: each element); the importer reads the values."""
    if isinstance(a, list):
        return [_bits_of_bf16(x) for x in a]
    return a.view("uint16") if getattr(a, "dtype", None) is not None and a.dtype.name == "bfloat16" else a


def _signature(named):
    """The import key of (name, array / list / shape tuple) pairs: tensor
    shapes, and the element shapes of a sequence (a list)."""
    out = []
    for name, a in named:
        if isinstance(a, list):
            out.append((name, ("seq",) + tuple(tuple(x.shape) for x in a)))
        elif a is not None:
            out.append((name, tuple(getattr(a, "shape", a))))
    return tuple(sorted(out))


def _same_values(read, values):
    return all(_same(arr, values.get(name)) for name, arr in read.items())


def _same(a, b):
    import numpy as np
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


class TvmdBackend(Backend):
    """``prepare(model, device="CPU", mode="compiled" | "interpreter", compile_options=None,
    **from_onnx options)``; `compile_options` go to ``runtime.build.build`` (opt_level,
    codegen_opt_level, fallback)."""

    @classmethod
    def prepare(cls, model, device="CPU", mode=DEFAULT_MODE, compile_options=None, **kwargs):
        if not cls.supports_device(device):
            raise ValueError(f"tvmd's ONNX backend runs on CPU, not '{device}'")
        rep = TvmdBackendRep(load_model(model), mode, compile_options, **_import_options(kwargs))
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


def _say(msg):
    import sys
    print(f"tvmd: {msg}", file=sys.stderr)


def _first_line(e):
    return str(e.diagnostics[0].message if getattr(e, "diagnostics", None) else e).splitlines()[0]


def _import_options(kwargs):
    """The from_onnx options among prepare's keyword arguments (the test
    runner passes tolerances, which are not ours)."""
    return {k: kwargs[k] for k in ("opset", "dtype", "freeze_params") if k in kwargs}


prepare = TvmdBackend.prepare
run_model = TvmdBackend.run_model
run_node = TvmdBackend.run_node
supports_device = TvmdBackend.supports_device
