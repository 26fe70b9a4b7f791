"""The one place where a tir name becomes text in generated code.

A symbol may hold anything (``tir.func @"evil\\r__device__ int x;"``): a
carriage return, newline, NUL, ``*/``, quotes, non-ASCII, spaces, a C
keyword.  Every backend that writes a name into C, CUDA, LLVM IR or PTX
goes through one of these:

* :func:`c_ident` -- a C identifier (letters, digits, ``_``), never a C/CUDA
  keyword, built-in or math function, never ``tvmd_*`` (the prelude's) or
  ``__*`` (the implementation's); :func:`unique_c_idents` makes those of a
  module's functions distinct.
* :func:`comment_text` -- the name as it may appear inside a ``//`` or
  ``/* */`` comment: printable ASCII only, every other character (and
  ``\\``, ``?``, ``*/``) escaped, so the comment cannot end early, splice
  the next line or hold a trigraph.
* :func:`llvm_symbols` -- the LLVM symbols of a module's functions, in
  order: a printable-ASCII name stays as it is (llvmlite quotes and escapes
  ``"`` and ``\\``), any other has its other characters as ``$hex$``
  (LLVM's parser refuses NUL and the JIT looks symbols up as ASCII);
  collisions get ``.N``.  Deterministic, so a loader recomputes them from the names alone.
"""

from __future__ import annotations

import re

# C/C++ keywords, CUDA built-ins and types, and the functions generated CUDA
# code calls: none may be a kernel's or a local's name.
RESERVED_C = frozenset("""
    auto bool break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union
    unsigned void volatile while class new delete this template typename namespace using operator
    true false threadIdx blockIdx blockDim gridDim warpSize half nv_bfloat16 max min
    asm catch const_cast constexpr decltype dynamic_cast explicit export friend mutable noexcept
    nullptr private protected public reinterpret_cast static_assert static_cast thread_local throw
    try typeid virtual wchar_t char16_t char32_t alignas alignof and or not xor bitand bitor compl
    and_eq or_eq not_eq xor_eq main float4 int4 make_float4 make_int4
    expf exp logf log sqrtf sqrt rsqrtf rsqrt tanhf tanh erff erf fabsf fabs floorf floor ceilf ceil
    rintf rint truncf trunc sinf sin cosf cos powf pow fmaf fma log2f log2 log10f log10 tanf tan
    asinf asin acosf acos atanf atan sinhf sinh coshf cosh asinhf asinh acoshf acosh atanhf atanh
    fmodf fmod
""".split())

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def c_ident(name, fallback="v", sep=""):
    """`name` as a C identifier: other characters become ``_``; a leading
    digit (or nothing) gets `fallback` + `sep` in front; a reserved name,
    ``tvmd_*`` or ``__*`` gets ``_`` after."""
    base = _NOT_IDENT.sub("_", name or "")
    if not base:
        return fallback
    if base[0].isdigit():
        base = f"{fallback}{sep}{base}"
    if base in RESERVED_C or base.startswith(("tvmd_", "__")):
        base = f"{base}_"
    return base


def unique(base, taken):
    """`base`, or ``base_N`` for the first N that is not in `taken`; added to it."""
    name, n = base, 1
    while name in taken:
        name = f"{base}_{n}"
        n += 1
    taken.add(name)
    return name


def unique_c_idents(names, fallback="k", sep="_"):
    """{name: C identifier} for distinct `names`, the identifiers distinct.
    A name that is already a valid identifier keeps it when it can."""
    names = list(dict.fromkeys(names))
    taken, out = set(), {}
    exact = [n for n in names if c_ident(n, fallback, sep) == n]
    for n in exact:                      # valid names first: they keep themselves
        out[n] = unique(n, taken)
    for n in names:
        if n not in out:
            out[n] = unique(c_ident(n, fallback, sep), taken)
    return out


def _escape(ch):
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def comment_text(name):
    """`name` safe inside a C comment (``//`` or ``/* */``) and on one line:
    printable ASCII but ``\\`` and ``?`` as is, the rest as ``\\xNN`` /
    ``\\uNNNN`` escapes, and ``*/`` (and ``/*``) broken as ``*\\x2f``."""
    out = [c if " " <= c <= "~" and c not in "\\?" else _escape(c) for c in str(name)]
    s = "".join(out)
    return s.replace("*/", "*\\x2f").replace("/*", "\\x2f*")


def _llvm_escape(name):
    return "".join(c if " " <= c <= "~" and c != "$" else "$%s$" % format(ord(c), "x") for c in name)


def llvm_symbols(names, reserved=()):
    """The LLVM symbols for a module's function `names`, in order (see the
    module's docstring); none equal to another or to one in `reserved`.
    Prefix-stable: the symbol of ``names[i]`` depends on ``names[:i + 1]`` only."""
    taken, out = set(reserved), []
    for n in names:
        s = n if all(" " <= c <= "~" for c in n) else _llvm_escape(n)
        base, k = s, 1
        while s in taken:
            s = f"{base}.{k}"
            k += 1
        taken.add(s)
        out.append(s)
    return out
