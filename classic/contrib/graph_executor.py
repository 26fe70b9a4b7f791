"""``tvm.contrib.graph_executor.GraphModule`` over a compiled relay model.

    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("data", x)          # by name or index; set_input(**params) too
    m.run()                         # or m.run(data=x)
    y = m.get_output(0).numpy()
"""

from __future__ import annotations

import numpy as np

from ..expr import TVMError


class GraphModule:
    def __init__(self, module):
        self.compiled = getattr(module, "compiled", module)
        self._names = list(self.compiled.input_names)
        self._inputs = {}
        self._outputs = None

    def _index(self, key):
        if isinstance(key, int):
            if not 0 <= key < len(self._names):
                raise TVMError(f"input index {key} out of range: the model has {len(self._names)} input(s)")
            return key
        if key not in self._names:
            raise TVMError(f"no input named '{key}' (inputs: {', '.join(self._names)})")
        return self._names.index(key)

    def set_input(self, key=None, value=None, **params):
        if key is not None:
            self._inputs[self._index(key)] = _array(value)
        for k, v in params.items():
            self._inputs[self._index(k)] = _array(v)

    def get_input(self, index):
        from ..nd import array
        return array(self._inputs[self._index(index)])

    def get_num_inputs(self):
        return len(self._names)

    def run(self, **inputs):
        self.set_input(**inputs)
        missing = [self._names[i] for i in range(len(self._names)) if i not in self._inputs]
        if missing:
            raise TVMError(f"input(s) not set: {', '.join(missing)}")
        out = self.compiled.run(*[self._inputs[i] for i in range(len(self._names))])
        self._outputs = list(out) if isinstance(out, (list, tuple)) else [out]

    def get_num_outputs(self):
        return len(self.compiled.entry_op.function_type.results)

    def get_output(self, index, out=None):
        from ..nd import array
        if self._outputs is None:
            raise TVMError("get_output before run()")
        v = array(self._outputs[index])
        if out is not None:
            out.copyfrom(v)
            return out
        return v


def _array(v):
    return np.ascontiguousarray(v.numpy() if hasattr(v, "numpy") else v)


def create(graph_json_str, libmod, device):
    raise TVMError("graph_executor.create(graph_json, lib, dev) takes TVM's graph JSON, which tvmd does not "
                   "emit: use GraphModule(lib['default'](dev))")
