"""Calling a kernel whose tensors have '?' dimensions (sizes known per call).

--lower-relay-to-te gives such a kernel one ``index`` parameter per '?' of
its tensor parameters and three attributes (conversion/relay_to_te/pass_.py,
_size_params), which say everything the runtime needs without the relay
types:

* ``size_args = [[i, a], ...]``: the size parameters, in order: each is
  dimension a of tensor parameter i;
* ``size_checks = [[i, a, j, b], ...]``: dimension a of tensor i must equal
  dimension b of tensor j (or the constant b where j = -1); the kernel
  reads every tensor with the sizes it is given, so a mismatch is an
  error here, before the call, never a read out of bounds;
* ``result_sizes = [[k, ax, i, a], ...]``: axis ax of result k has the
  size of dimension a of tensor i (its other axes are static).

A step per call: read the sizes, check them, allocate the results, call.
"""

from __future__ import annotations

import numpy as np

from ..ir import types as T
from .ndarray import as_kernel_input, empty_aligned


class SizeMismatch(ValueError):
    pass


def dynamic_kernel_step(kernel, callee, out, ins, as_tuple):
    attrs = callee.attributes
    size_args = [tuple(x) for x in attrs.get("size_args", ())]
    checks = [tuple(x) for x in attrs.get("size_checks", ())]
    outs_spec = []
    for b in callee.outputs:
        t = b.type
        outs_spec.append((list(t.shape), np.dtype(T.to_numpy_dtype(t.element_type))))
    fill = [tuple(x) for x in attrs.get("result_sizes", ())]
    name = callee.sym_name

    def run(env):
        args = [as_kernel_input(env[i]) for i in ins]
        for i, a, j, b in checks:
            want = b if j < 0 else args[j].shape[b]
            if args[i].shape[a] != want:
                raise SizeMismatch(f"@{name}: dimension {a} of argument {i} is {args[i].shape[a]} but must equal "
                                   + (f"{b}" if j < 0 else f"dimension {b} of argument {j} ({want})")
                                   + " (a '?' dimension does not broadcast)")
        sizes = [args[i].shape[a] for i, a in size_args]
        shapes = [list(s) for s, _ in outs_spec]
        for k, ax, i, a in fill:
            shapes[k][ax] = args[i].shape[a]
        outs = [empty_aligned(tuple(s), dt) for s, (_, dt) in zip(shapes, outs_spec)]
        kernel(*args, *sizes, *outs)
        env[out] = tuple(outs) if as_tuple else outs[0]
    return run
