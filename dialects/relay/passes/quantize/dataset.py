"""Calibration data: .npz files whose arrays are named after @main's parameters.

``dataset=PATH`` is one ``.npz`` file or a folder of them (read in sorted
name order).  In each file there is one array per parameter of @main, named
as the parameter (``%x`` -> ``x``; an unnamed parameter by its position,
``0``, ``1``, ...).  An array holds

* one sample: exactly the parameter's shape;
* several samples along a new leading axis: shape ``(N,) + shape``;
* several batches along the batch axis: shape ``(k * B,) + shape[1:]`` for a
  parameter of batch B (``(100, 3, 32, 32)`` for ``tensor<1x3x32x32xf32>``
  is 100 samples).

All arrays of one file give the same number of samples.  Values are cast to
the parameter's dtype.  Files are read with ``allow_pickle=False``: a data
set never runs code.  Every problem (a missing file, an unreadable one, an
array named after no parameter, a missing parameter, a shape that fits none
of the rules) is a DiagnosticError at @main, naming the file.
"""

from __future__ import annotations

import os

from .....ir.diagnostics import DiagnosticError


def param_names(func) -> list[str]:
    return [a.name if a.name else str(i) for i, a in enumerate(func.body.args)]


def load_dataset(path: str, func) -> list[tuple]:
    """The samples of `path` for relay.func `func`: a list of argument tuples."""
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".npz"))
        if not files:
            raise DiagnosticError(func.loc, f"dataset folder '{path}' holds no .npz files")
    elif os.path.isfile(path):
        files = [path]
    else:
        raise DiagnosticError(func.loc, f"dataset '{path}' does not exist")
    samples = []
    for f in files:
        samples.extend(_load_file(f, func))
    if not samples:
        raise DiagnosticError(func.loc, f"dataset '{path}' holds no samples")
    return samples


def _load_file(fname, func):
    import numpy as np
    try:
        with np.load(fname, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as e:  # zip, header or pickle refusals: all the user's file
        raise DiagnosticError(func.loc, f"cannot read dataset file '{fname}': {type(e).__name__}: {e}") from None
    return split_samples(arrays, func, f"dataset file '{fname}'")


def split_samples(arrays: dict, func, where: str) -> list[tuple]:
    """Samples from named arrays (one file's worth), per the module docstring."""
    import numpy as np
    names = param_names(func)
    params = {n: a for n, a in zip(names, func.body.args)}
    for k in arrays:
        if k not in params:
            raise DiagnosticError(func.loc, f"{where}: array '{k}' names no parameter of "
                                            f"@{func.sym_name} (parameters: {', '.join(names)})")
    counts, columns = {}, []
    for n in names:
        if n not in arrays:
            raise DiagnosticError(func.loc, f"{where} has no array '{n}' for parameter %{n} of @{func.sym_name}")
        t = params[n].type
        arr = np.asarray(arrays[n])
        per = _split(arr, t.shape)
        if per is None:
            raise DiagnosticError(func.loc, f"{where}: array '{n}' of shape {list(arr.shape)} fits parameter "
                                            f"%{n} : {t} as neither one sample, (N, ...) samples nor batches")
        counts[n] = len(per)
        columns.append([p.astype(t.dtype) for p in per])
    if len(set(counts.values())) > 1:
        raise DiagnosticError(func.loc, f"{where}: arrays give different sample counts "
                                        f"({', '.join(f'{k}: {v}' for k, v in counts.items())})")
    return list(zip(*columns))


def _fits(shape, want) -> bool:
    return len(shape) == len(want) and all(w is None or s == w for s, w in zip(shape, want))


def _split(arr, want):
    """`arr` cut into arrays of shape `want`, or None when no rule applies."""
    if _fits(arr.shape, want):
        return [arr]
    if arr.ndim == len(want) + 1 and _fits(arr.shape[1:], want):
        return list(arr)
    if want and arr.ndim == len(want) and _fits(arr.shape[1:], want[1:]):
        b = want[0]
        if b and arr.shape[0] % b == 0:
            return [arr[i:i + b] for i in range(0, arr.shape[0], b)]
    return None


def samples_from_python(data, func) -> list[tuple]:
    """Samples given in Python: a path, a list of dicts name -> array (TVM's
    dataset form), or a list of argument tuples."""
    if isinstance(data, (str, os.PathLike)):
        return load_dataset(os.fspath(data), func)
    out = []
    for i, item in enumerate(data):
        if isinstance(item, dict):
            out.extend(split_samples(item, func, f"calibration sample {i}"))
        else:
            out.append(tuple(item))
    return out
