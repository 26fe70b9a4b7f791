"""bfloat16 in numpy, which has no such dtype: the reference the bf16
tests and benchmarks check compiled code against (float32 bits rounded
to the top 16, to nearest even; a NaN keeps its sign, made quiet)."""

from __future__ import annotations

import numpy as np


def bits(x):
    """float32 values -> bf16 bits (uint16)."""
    x = np.asarray(x, np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((b >> 16) | 0x40).astype(np.uint16), rounded)


def value(b):
    """bf16 bits -> their float32 values."""
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32)


def rounded(x):
    """float32 values rounded to bf16, as float32."""
    return value(bits(x))
