"""Target strings, as TVM's command line wrote them.

    llvm                                      the host CPU (its name and features)
    llvm -mcpu=znver3 -mattr=+avx2,-avx512f   a CPU, with features on or off
    llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1
    cuda                                      sm_90
    cuda -arch=sm_80

``parse_target(text)`` returns an :class:`LLVMTarget` or a
:class:`CUDATarget`.  A bad string raises :class:`TargetError` with the
offset of the problem in the text, so a driver can put a caret under it.
Nothing here imports llvmlite: the host CPU is looked up only when a target
machine is made.
"""

from __future__ import annotations

import re


class TargetError(ValueError):
    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


KINDS = ("llvm", "cuda")
_OPTIONS = {
    "llvm": ("mtriple", "mcpu", "mattr"),
    "cuda": ("arch",),
}


def _tokens(text):
    """Whitespace-separated words with their offsets."""
    return [(m.group(0), m.start()) for m in re.finditer(r"\S+", text)]


def parse_target(text: str):
    """Parse a target string; see the module docstring."""
    toks = _tokens(text)
    if not toks:
        raise TargetError("empty target string; expected 'llvm' or 'cuda'", 0)
    kind, koff = toks[0]
    if kind not in KINDS:
        raise TargetError(f"unknown target kind '{kind}'; expected one of {', '.join(KINDS)}", koff)
    opts: dict[str, tuple[str, int]] = {}
    for word, off in toks[1:]:
        m = re.fullmatch(r"--?([A-Za-z][\w-]*)=(.*)", word)
        if not m:
            raise TargetError(f"expected -key=value in the target string, got '{word}'", off)
        key, value = m.group(1), m.group(2)
        if key not in _OPTIONS[kind]:
            raise TargetError(f"unknown option '-{key}' for target '{kind}' (options: "
                              f"{', '.join('-' + k for k in _OPTIONS[kind])})", off)
        if not value:
            raise TargetError(f"option '-{key}' needs a value", off)
        opts[key] = (value, off + word.index("=") + 1)
    if kind == "llvm":
        from .llvm.target import LLVMTarget
        return LLVMTarget.from_options(opts)
    from .cuda.target import CUDATarget
    return CUDATarget.from_options(opts)


def as_target(target, default_kind="llvm"):
    """A target object from an object, a string, or None (the default kind)."""
    if target is None:
        return parse_target(default_kind)
    if isinstance(target, str):
        return parse_target(target)
    return target
