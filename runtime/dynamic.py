"""Calling a kernel whose tensors have '?' dimensions (sizes known per call).

--lower-relay-to-te gives such a kernel one ``index`` parameter per '?' of
its tensor parameters and three attributes (conversion/relay_to_te/pass_.py,
_size_params), which say everything the runtime needs without the relay
types:

* ``size_args = [[i, a], ...]``: the size parameters, in order: each is
  dimension a of tensor parameter i;
* ``size_checks = [[size, size], ...]``: sizes that must be equal (the
  kernel reads every tensor with the sizes it is given, so a mismatch is
  an error here, before the call, never a read out of bounds);
* ``result_sizes = [[k, ax, size], ...]``: axis ax of result k (its other
  axes are static);

where a size ``[c, i1, a1, i2, a2, ...]`` is c plus dimension a1 of tensor
i1 plus ... (concatenate along a '?' axis sums its inputs' sizes).

A step per call: read the sizes, check them, allocate the results, call.

A kernel marked ``append_to = [p, axis]`` (runtime.build.appends_to:
concatenate(parameter p, x) along an axis with only 1s before it, a KV
cache's present = past + this step's keys) grows its result in place.
Its result is a view of the first rows of a buffer with room for more
(twice the rows, at least 16 more), and the next call whose parameter p
is exactly that view, and the longest one made of that buffer, writes only
the new rows behind it, the kernel run with an empty past into them: no
copy of the cache per decoding step.  Any other past (a user's array, a
shorter view: an earlier step fed again, a branch) is copied into a new
buffer first, so no array a caller holds ever changes: rows are only
written past every view handed out.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..ir import types as T
from .ndarray import as_kernel_input, data_ptr, empty_aligned


class SizeMismatch(ValueError):
    pass


def size_of(size, args):
    """The value of an encoded size for the call's tensors."""
    n = size[0]
    for k in range(1, len(size), 2):
        n += args[size[k]].shape[size[k + 1]]
    return n


def size_text(size):
    terms = [f"dimension {size[k + 1]} of argument {size[k]}" for k in range(1, len(size), 2)]
    if size[0] or not terms:
        terms.append(str(size[0]))
    return " + ".join(terms)


def dynamic_kernel_step(kernel, callee, out, ins, as_tuple, view=False, append_to=None):
    """The step running `kernel` (of tir.func `callee`) on '?' sizes: its
    outputs sized from the inputs per call.  With `view` (a kernel that
    only reshapes its input: runtime.build.reshapes_only), the result is
    the input reshaped, a view where it is contiguous, and the kernel's
    copy is not run."""
    attrs = callee.attributes
    size_args = [tuple(x) for x in attrs.get("size_args", ())]
    checks = [(list(a), list(b)) for a, b in attrs.get("size_checks", ())]
    outs_spec = []
    for b in callee.outputs:
        t = b.type
        outs_spec.append((list(t.shape), T.storage_numpy_dtype(t.element_type)))
    fill = [(k, ax, list(size)) for k, ax, size in attrs.get("result_sizes", ())]
    name = callee.sym_name
    call = _direct_call(kernel, len(ins), len(size_args), len(outs_spec))

    def run(env):
        args = [as_kernel_input(env[i]) for i in ins]
        for a, b in checks:
            x, y = size_of(a, args), size_of(b, args)
            if x != y:
                raise SizeMismatch(f"@{name}: {size_text(a)} is {x} but must equal {size_text(b)} ({y}) "
                                   "(a '?' dimension does not broadcast)")
        sizes = [args[i].shape[a] for i, a in size_args]
        shapes = [list(s) for s, _ in outs_spec]
        for k, ax, size in fill:
            shapes[k][ax] = size_of(size, args)
        if view:
            env[out] = np.reshape(args[0], tuple(shapes[0]))
            return
        if append_to is not None:
            env[out] = grow(args, shapes[0])
            return
        outs = [empty_aligned(tuple(s), dt) for s, (_, dt) in zip(shapes, outs_spec)]
        invoke(args, sizes, outs)
        env[out] = tuple(outs) if as_tuple else outs[0]

    def invoke(args, sizes, outs):
        if call is None:
            kernel(*args, *sizes, *outs)
        else:
            call(args, sizes, outs)

    if append_to is not None:
        grow = _grower(append_to, outs_spec[0][1], size_args, invoke)
    return run


class _Grown:
    """A buffer a growing result lives in: its owner (weakly: the views
    handed out keep it alive), the rows along the axis those views cover,
    the rows it has room for, and the elements per row."""
    __slots__ = ("owner", "rows", "cap", "row")

    def __init__(self, owner, rows, cap, row):
        self.owner, self.rows, self.cap, self.row = weakref.ref(owner), rows, cap, row


_GROWN: dict = {}   # data address of a grown buffer -> _Grown


def _grower(append_to, dtype, size_args, invoke):
    """grow(args, shape): the result, of shape `shape`, of an append kernel
    (the module docstring) for inputs `args`; invoke(args, sizes, outs)
    runs the kernel."""
    p, axis = append_to

    def grow(args, shape):
        past = args[p]
        dest, result = grow_into(past, shape, axis, dtype)
        tail_args = list(args)
        empty = list(past.shape)
        empty[axis] = 0
        tail_args[p] = np.empty(tuple(empty), past.dtype)
        invoke(tail_args, [tail_args[i].shape[x] for i, x in size_args], [dest])
        return result
    return grow


def grow_into(past, shape, axis, dtype):
    """(dest, result) for an append kernel's call whose past is `past` and
    whose result has `shape`: `result` the first rows of a buffer with
    room, `past` in front (in place when `past` is the longest view of a
    buffer grown before, else copied into a new one), and `dest` the new
    rows behind it, which the kernel, run with an empty past, writes."""
    have, total = past.shape[axis], shape[axis]
    row = math.prod(shape[axis + 1:])
    at = data_ptr(past) if past.size else None
    g = _GROWN.get(at)
    owner = g.owner() if g is not None else None
    if owner is not None and g.rows == have and g.cap >= total and g.row == row and past.dtype == dtype:
        full = np.ndarray((g.cap, row), dtype, buffer=owner, offset=at - data_ptr(owner))
        cap = g.cap
    else:
        # a past this kernel did not make (a user's array, an earlier
        # step's shorter one) or one without room: a new buffer, the
        # past copied in once
        cap = max(2 * total, total + 16)
        full = empty_aligned((cap, row), dtype)
        full[:have] = past.reshape(have, row)
        owner = full.base if full.base is not None else full
    new = list(shape)
    new[axis] = total - have
    dest = full[have:total].reshape(tuple(new))
    result = full[:total].reshape(tuple(shape))
    for k in [k for k, v in _GROWN.items() if v.owner() is None]:
        del _GROWN[k]
    _GROWN[data_ptr(result)] = _Grown(owner, total, cap, row)
    return dest, result


def sized_signature(kernel, n_in, n_sizes, n_out):
    """Whether `kernel`'s C entry takes `n_in` tensors, `n_sizes` sizes and
    `n_out` outputs, in that order (then its hidden '?' dimensions), and
    ctypes can call it: what a step sized per call passes, from Python or
    from runtime/aot_dynamic.py's native entry."""
    kinds = [p.kind for p in kernel.sig.declared]
    return not kernel.unsupported and kinds == ["buffer"] * n_in + ["scalar"] * n_sizes + ["buffer"] * n_out


def _direct_call(kernel, n_in, n_sizes, n_out):
    """The kernel's C entry called with pointers, sizes and the hidden '?'
    dimensions (backend/abi.py), without Kernel.__call__'s checks per
    call: the inputs' static dimensions are those of the relay types the
    executor checked at the entry and the kernels made, their '?' sizes
    are the ones just checked, and the outputs are fresh.  None when the
    signature is not tensors, sizes, outputs in that order."""
    if not sized_signature(kernel, n_in, n_sizes, n_out):
        return None
    sig = kernel.sig
    hidden = [(p.buffer, p.axis) for p in sig.params[len(sig.declared):]]
    cfunc = kernel.cfunc

    def call(args, sizes, outs):
        bufs = args + [None] * n_sizes + outs   # declared positions: a hidden dim names a buffer's
        dims = [bufs[b].shape[a] for b, a in hidden]
        cfunc(*[data_ptr(a) for a in args], *sizes, *[data_ptr(o) for o in outs], *dims)
    return call
