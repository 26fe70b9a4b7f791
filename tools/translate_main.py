"""tvm-translate: turn tir into LLVM IR, assembly, an object file or CUDA C.

    tvm-translate [file|-] --emit=llvm|asm|obj|cuda|ptx|cubin [--target=T] [-O0..-O3] [-o out]

Every tir.func of the input is translated (other ops, such as a relay
``main``, are left out).  Diagnostics follow tvm-opt: ``file:line:col:
error:`` with the source line and a caret (command-line mistakes point into
``<command line>``), exit code 1, no traceback.  Outputs are written
atomically; a binary (``obj``, ``cubin``) goes to stdout only when stdout is
not a terminal.  Imports stay inside functions so that ``--help`` is fast.
"""

from __future__ import annotations

import sys

from .cmdline import ToolDriver, take_input, report_internal_error, take_value, tool_main

USAGE = ("usage: tvm-translate [file|-] --emit=llvm|asm|obj|cuda|ptx|cubin [--target=TARGET] "
         "[-O0..-O3] [-o out]")

HELP = """\
Translates tir functions (the output of tvm-opt --lower-te-to-tir) to target code.

  file | -             input IR, or '-' / nothing for stdin
  -o FILE              write the result to FILE (atomically)
  --emit=KIND          what to produce:
                         llvm   LLVM IR text (as generated at -O0, optimised at -O1..-O3)
                         asm    target assembly (default -O3)
                         obj    a relocatable object file (default -O3); tvmd's loader can
                                run it without the IR (tvmd.target.llvm.jit.load_object)
                         cuda   CUDA C source, one __global__ kernel per function
                         ptx    PTX, compiled from the CUDA C (NVRTC or nvcc)
                         cubin  a cubin, compiled from the CUDA C (NVRTC or nvcc)
  --target=TARGET      'llvm' (the host CPU, default for llvm/asm/obj),
                       'llvm -mcpu=znver3 -mattr=+avx2', 'llvm -mtriple=aarch64-linux-gnu',
                       'cuda' or 'cuda -arch=sm_90' (default for cuda/ptx/cubin)
  -O0 -O1 -O2 -O3      LLVM optimisation level
  --help, --version

importers (not implemented yet; they come in a later issue):
  --import-onnx, --import-relay-text, --import-pytorch

environment: TVMD_NUM_THREADS sets the threads compiled parallel loops use at run time.
"""

EMITS = ("llvm", "asm", "obj", "cuda", "ptx", "cubin")
BINARY = ("obj", "cubin")
IMPORTERS = ("--import-onnx", "--import-relay-text", "--import-pytorch")


class Options:
    def __init__(self):
        self.input = None
        self.input_index = None
        self.output = None
        self.output_index = None
        self.emit = None
        self.emit_index = None
        self.target = None
        self.target_index = None
        self.target_offset = 0
        self.opt_level = None


def parse_args(argv, cl):
    o = Options()
    i, n = 0, len(argv)
    while i < n:
        a = argv[i]
        if a == "-" or not a.startswith("-"):
            take_input(o, a, i, cl)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in IMPORTERS:
            raise cl.error(i, f"'{name}' is not implemented yet: the importers come in a later issue")
        if name in ("-O0", "-O1", "-O2", "-O3") and not eq:
            o.opt_level = int(name[2])
            i += 1
            continue
        if name in ("--emit", "--target", "-o", "--output"):
            value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
            if name == "--emit":
                if value not in EMITS:
                    raise cl.error(vi, f"unknown --emit kind '{value}'; expected one of {', '.join(EMITS)}", voff)
                o.emit, o.emit_index = value, vi
            elif name == "--target":
                o.target, o.target_index, o.target_offset = value, vi, voff
            else:
                o.output, o.output_index = value, vi
            continue
        import difflib
        known = ["--emit", "--target", "--output", "--help", "--version", *IMPORTERS]
        cands = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{cands[0]}'?" if cands else ""
        raise cl.error(i, f"unknown option '{name}'{hint}")
    if o.emit is None:
        raise cl.error(-1, "no output kind: give --emit=llvm|asm|obj|cuda|ptx|cubin")
    return o


def resolve_target(o, cl):
    from ..target.spec import TargetError, parse_target
    want = "cuda" if o.emit in ("cuda", "ptx", "cubin") else "llvm"
    text = o.target if o.target is not None else want
    try:
        t = parse_target(text)
    except TargetError as e:
        raise cl.error(o.target_index, f"invalid target: {e}", o.target_offset + e.offset) from None
    if t.kind != want:
        raise cl.error(o.target_index, f"--emit={o.emit} needs a {want} target, got '{text}'", o.target_offset)
    return t


class Driver(ToolDriver):
    PROG = "tvm-translate"

    def run(self) -> int:
        argv = self.argv
        if any(a in ("--help", "-h") for a in argv):
            sys.stdout.write(USAGE + "\n\n" + HELP)
            return 0
        if "--version" in argv:
            from .. import __version__
            sys.stdout.write(f"tvm-translate (tvmd) {__version__}\n")
            return 0
        from ..ir.diagnostics import DiagnosticError
        cl = self.cl
        try:
            o = parse_args(argv, cl)
            target = resolve_target(o, cl)
            if o.emit in BINARY and (o.output is None or o.output == "-") and sys.stdout.isatty():
                raise cl.error(o.emit_index, f"refusing to write a binary {o.emit} file to a terminal; "
                                             f"use -o FILE or a pipe")
            from ..parser import parse_module
            fname, text = self.read_input(o.input or "-", o.input_index)
            module = parse_module(text, fname)
            result = self.translate(module, fname, o, target, cl)
        except DiagnosticError as e:
            self.report(e)
            return 1
        except Exception as e:   # a bug in a backend: a message, not a traceback
            report_internal_error(e)
            return 1
        return self.write(result, o, cl)

    def translate(self, module, fname, o, target, cl):
        from ..ir.diagnostics import DiagnosticError
        from ..ir.location import FileLoc
        funcs = [op for op in module.body.ops if op.name == "tir.func"]
        if not funcs:
            raise DiagnosticError(FileLoc(fname, 1, 1), "the input has no tir.func to translate "
                                                        "(lower it first: tvm-opt --lower-te-to-tir)")
        if o.emit in ("cuda", "ptx", "cubin"):
            from ..target.cuda.codegen import generate
            source, _ = generate(module, target)
            if o.emit == "cuda":
                return source
            from ..target.cuda.compile import CudaCompileError, compile_cuda
            try:
                data = compile_cuda(source, target.arch, o.emit)
            except CudaCompileError as e:
                raise DiagnosticError(FileLoc(fname, 1, 1), f"CUDA compilation failed: {e}") from None
            return data.decode() if o.emit == "ptx" else data
        from ..target.llvm import jit
        from ..target.spec import TargetError
        try:
            if o.emit == "llvm":
                return jit.emit_llvm(module, target, 0 if o.opt_level is None else o.opt_level)
            level = 3 if o.opt_level is None else o.opt_level
            if o.emit == "asm":
                return jit.emit_assembly(module, target, level)
            return jit.emit_object(module, target, level)
        except TargetError as e:
            raise cl.error(o.target_index, f"invalid target: {e}", o.target_offset) from None

    def write(self, result, o, cl) -> int:
        from .cmdline import write_atomic, write_atomic_bytes
        if o.output is None or o.output == "-":
            if isinstance(result, bytes):
                sys.stdout.buffer.write(result)
                sys.stdout.buffer.flush()
            else:
                sys.stdout.write(result)
                sys.stdout.flush()
            return 0
        try:
            if isinstance(result, bytes):
                write_atomic_bytes(o.output, result)
            else:
                write_atomic(o.output, result)
        except OSError as e:
            self.report(cl.error(o.output_index, f"cannot write '{o.output}': {e.strerror}"))
            return 1
        return 0


def main(argv=None) -> int:
    return tool_main(Driver, argv)


if __name__ == "__main__":
    sys.exit(main())
