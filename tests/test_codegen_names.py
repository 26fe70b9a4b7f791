"""Symbol names reach generated C, LLVM IR and PTX only through
tvmd.backend.names (issue 9: a carriage return in a quoted symbol ended the
``// launch @...`` comment and nvcc compiled the rest of the name)."""

import re

import numpy as np
import pytest

from tvmd.backend import names
from tvmd.backend.cuda.codegen import generate
from tvmd.backend.cuda.compile import compile_cuda, have_compiler
from tvmd.parser import parse_module

EVIL = [
    "evil\r__device__ int injected = 42;",
    "evil2\n__device__ int injected_nl = 1;",
    "c*/ __device__ int injected_close; /*",
    'q"uote\\',                  # a quote and a trailing backslash (line splice)
    "nul\0__device__ int injected_nul;",
    "unicod\u00e9 \u2028 int injected_ls;",
    "has spaces",
    "has_spaces",                 # mangles the same as the one before
    "int",                        # a C keyword
    "expf",                       # a CUDA math function the kernels call
    "9lives",
    "tvmd_floordiv",              # a prelude helper
    "trig??/",                    # a trigraph backslash
]

KERNEL = """\
tir.func @"{name}"(%A: memref<4xf32>) {{
  tir.for %t = 0 to 4 thread("threadIdx.x") {{
    %x = tir.load %A[%t] : f32
    %y = arith.addf %x, %x : f32
    tir.store %y, %A[%t] : f32
  }}
}}
"""
PLAIN = """\
tir.func @"{name}"(%A: memref<4xf32>) {{
  tir.for %t = 0 to 4 {{
    %x = tir.load %A[%t] : f32
    %y = arith.addf %x, %x : f32
    tir.store %y, %A[%t] : f32
  }}
}}
"""


def _module(template, symbols):
    """A module with one function per symbol.  The parser reads a quoted
    symbol's characters as they are (but `"` and newline, which end it), so
    the others are put in the text raw and the rest set on the op."""
    text = "".join(template.format(name=f"f{i}") for i in range(len(symbols)))
    m = parse_module(text)
    for f, s in zip([op for op in m.body.ops], symbols):
        f.attributes["sym_name"] = s
    return m


def test_parser_keeps_raw_control_characters_in_symbols():
    m = parse_module(KERNEL.format(name="evil\r__device__ int injected = 42;"))
    assert next(iter(m.body.ops)).sym_name == "evil\r__device__ int injected = 42;"


def _code_outside_comments(src):
    """The C source with comments removed the way a C preprocessor does:
    backslash-newlines spliced first, then // and /* */ comments."""
    src = re.sub(r"\\\r?\n", "", src)
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = min([k for k in (src.find("\n", i), src.find("\r", i)) if k >= 0] or [n])
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def test_cuda_has_no_injected_code():
    m = _module(KERNEL, EVIL)
    src, kernels = generate(m)
    code = _code_outside_comments(src)
    # the names survive only inside identifiers (evil___device___int_injected...)
    assert not re.search(r"\binjected", code) and "__device__ int" not in code, code
    # every comment is one printable-ASCII line
    assert all(" " <= c <= "~" for line in src.split("\n") for c in line), \
        [line for line in src.split("\n") if not all(" " <= c <= "~" for c in line)]
    for line in src.split("\n"):
        if line.startswith("//"):
            assert not line.endswith("\\") and "*/" not in line and "??" not in line, line
    symbols = [k.symbol for k in kernels]
    assert len(set(symbols)) == len(EVIL)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) for s in symbols), symbols
    assert not {"int", "expf", "tvmd_floordiv"} & set(symbols)
    assert all(f"void __launch_bounds__(4) {s}(" in src for s in symbols)


def test_names_that_mangle_alike_get_distinct_c_names():
    m = _module(KERNEL, ["a b", "a_b", "a-b", "a.b"])
    src, kernels = generate(m)
    by_name = {k.name: k.symbol for k in kernels}
    assert by_name["a_b"] == "a_b"          # a valid identifier keeps itself
    assert len(set(by_name.values())) == 4
    assert sorted(re.findall(r"__global__ void __launch_bounds__\(4\) (\w+)\(", src)) == sorted(by_name.values())


def test_host_comment_is_sanitised():
    text = """\
tir.func @k(%A: memref<64xf32>) {
  tir.for %i = 0 to 64 thread("threadIdx.x") {
    %x = tir.load %A[%i] : f32
    tir.store %x, %A[%i] : f32
  }
}
tir.func @host(%A: memref<64xf32>) {
  "tir.launch"(%A) {callee = @k} : (memref<64xf32>) -> ()
}
"""
    m = parse_module(text)
    ops = list(m.body.ops)
    ops[1].attributes["sym_name"] = "host\r__device__ int injected_host;"
    src, _ = generate(m)
    assert not re.search(r"\binjected", _code_outside_comments(src))
    assert "// host @host\\x0d__device__ int injected_host;: launches @k" in src


@pytest.mark.skipif(not have_compiler(), reason="no CUDA compiler (nvrtc or nvcc)")
def test_sanitised_cuda_compiles():
    src, kernels = generate(_module(KERNEL, EVIL))
    ptx = compile_cuda(src, arch="sm_90", output="ptx").decode(errors="replace")
    assert not re.search(r"\binjected", ptx)
    for k in kernels:
        assert f".entry {k.symbol}(" in ptx


def test_comment_text():
    assert names.comment_text("a\rb\nc\0d") == "a\\x0db\\x0ac\\x00d"
    assert names.comment_text("x*/y/*z") == "x*\\x2fy\\x2f*z"
    assert names.comment_text("end\\") == "end\\x5c"
    assert names.comment_text("\u00e9\U0001f600") == "\\xe9\\U0001f600"
    assert names.comment_text("plain_name.1") == "plain_name.1"


def test_c_ident():
    assert names.c_ident("a b") == "a_b"
    assert names.c_ident("int") == "int_"
    assert names.c_ident("9x", "k", "_") == "k_9x"
    assert names.c_ident("__x") == "__x_"
    assert names.c_ident("") == "v"


def test_llvm_symbols():
    s = names.llvm_symbols(["a", "a\0b", "a$0$b", "\u00e9", "a"])
    assert s[:3] == ["a", "a$0$b", "a$0$b.1"] and s[4] == "a.1"
    assert all(" " <= c <= "~" for x in s for c in x) and len(set(s)) == 5
    assert s == names.llvm_symbols(["a", "a\0b", "a$0$b", "\u00e9", "a"][:5])
    assert names.llvm_symbols(["a\0b"]) == s[1:2]    # prefix-stable


def _check_jit(lib, symbols):
    for s in symbols:
        a = np.arange(4, dtype=np.float32)
        lib[s](a)
        np.testing.assert_array_equal(a, 2 * np.arange(4, dtype=np.float32))


def test_llvm_ir_verifies_and_jit_runs():
    from tvmd.backend.llvm import jit
    m = _module(PLAIN, EVIL)
    text = jit.emit_llvm(m)           # parses and verifies
    assert "\0" not in text and all(c in "\n\t" or " " <= c <= "~" for c in text)
    _check_jit(jit.compile(m), EVIL)


def test_object_file_round_trip():
    from tvmd.backend.llvm import jit
    m = _module(PLAIN, EVIL)
    _check_jit(jit.load_object(jit.emit_object(m)), EVIL)
