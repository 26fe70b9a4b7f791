"""The CUDA target: ``cuda`` (sm_90) or ``cuda -arch=sm_80``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..spec import TargetError

DEFAULT_ARCH = "sm_90"


@dataclass(frozen=True)
class CUDATarget:
    kind = "cuda"
    arch: str = DEFAULT_ARCH

    @classmethod
    def from_options(cls, opts):
        if "arch" in opts:
            value, off = opts["arch"]
            if not re.fullmatch(r"sm_\d{2,3}[af]?", value):
                raise TargetError(f"bad CUDA architecture '{value}'; expected e.g. sm_80 or sm_90", off)
            return cls(value)
        return cls()

    def __str__(self):
        return f"cuda -arch={self.arch}"
