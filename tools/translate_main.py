"""tvm-translate: turn tir into LLVM IR, assembly, an object file or CUDA C,
and import models from other frameworks as relay text.

    tvm-translate [file|-] --emit=llvm|asm|obj|cuda|ptx|cubin [--target=T] [-O0..-O3] [-o out]
                  [--split-input-file] [--verify-diagnostics]
    tvm-translate --import-onnx model.onnx [--input-shape=NAME:1x3x?x?] [-o out.relay]
    tvm-translate --import-pytorch module.py:factory [-o out.relay]
    tvm-translate --import-tvm-relay model.txt [--params model.params] [-o out.relay]
    tvm-translate model.relay --export-tvm-relay [-o model.txt]

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

USAGE = ("usage: tvm-translate [file|-] --emit=llvm|asm|obj|shared-lib|cuda|ptx|cubin [--target=TARGET] "
         "[-O0..-O3] [-o out] [--split-input-file] [--verify-diagnostics]\n"
         "       tvm-translate --import-onnx model.onnx [--input-shape=NAME:DIMS ...] [-o out.relay]\n"
         "       tvm-translate --import-pytorch module.py:factory [-o out.relay]\n"
         "       tvm-translate --import-tvm-relay model.txt [--params FILE] [-o out.relay]\n"
         "       tvm-translate model.relay --export-tvm-relay [-o model.txt]")

HELP = """\
Translates tir functions (the output of tvm-opt --lower-te-to-tir) to target code.

  file | -             input IR, or '-' / nothing for stdin
  -o FILE              write the result to FILE (atomically)
  --emit=KIND          what to produce:
                         llvm   LLVM IR text (as generated at -O0, optimised at -O1..-O3)
                         asm    target assembly (default -O3)
                         obj    a relocatable object file (default -O3); tvmd's loader can
                                run it without the IR (tvmd.backend.llvm.jit.load_object)
                         shared-lib
                                a relay model (@main) compiled whole into a shared object
                                (-o model.so) with its weights, and model.h beside it:
                                void model_run(inputs..., results...); linking needs cc
                                (load it back with tvmd.runtime.export.load_library)
                         cuda   CUDA C source: a __global__ kernel per device function
                                (tir-split-host-device outlines them from host functions)
                         ptx    PTX, compiled from the CUDA C (NVRTC or nvcc)
                         cubin  a cubin, compiled from the CUDA C (NVRTC or nvcc)
  --target=TARGET      'llvm' (the host CPU, default for llvm/asm/obj),
                       'llvm -mcpu=znver3 -mattr=+avx2', 'llvm -mtriple=aarch64-linux-gnu',
                       'cuda' or 'cuda -arch=sm_90' (default for cuda/ptx/cubin)
  -O0 -O1 -O2 -O3      LLVM optimisation level
  --split-input-file   split the input at '// -----' lines and translate each chunk alone
                       (text outputs only; they are joined with '// -----' lines)
  --verify-diagnostics check '// expected-error {{...}}' annotations (@+N, @-N, @above, @below)
                       against the diagnostics of parsing and translating, as tvm-opt does
  --help, --version

importers (write relay text, large weights in the resource section):
  --import-onnx FILE   an ONNX model (a file path); @main takes the graph inputs,
                       each op is located at its node's name (--print-debuginfo)
  --input-shape=NAME:DIMS
                       with --import-onnx: the shape of input NAME, e.g. x:1x3x224x224
                       ('?' for a dynamic dimension); repeatable
  --print-debuginfo    with --import-onnx: print each op's location (the ONNX node)
  --import-pytorch FILE.py:FACTORY
                       a PyTorch model: FILE.py is run and FACTORY() called; it returns
                       a torch.export.ExportedProgram, or (module, example_inputs) or
                       (module, example_inputs, dynamic_shapes), exported here
                       (needs torch: pip install 'tvmd[torch]')
  --import-tvm-relay FILE
                       classic TVM's Relay text (#[version = "0.0.5"], def @main(...),
                       meta[relay.Constant][i] from its #[metadata] section)
  --params FILE        with --import-tvm-relay: a relay.save_param_dict file; each array
                       becomes a constant in place of @main's parameter of that name
  --export-tvm-relay   write the input relay module as classic TVM's Relay text

environment: TVMD_NUM_THREADS sets the threads compiled parallel loops use at run time.
"""

EMITS = ("llvm", "asm", "obj", "shared-lib", "cuda", "ptx", "cubin")
BINARY = ("obj", "shared-lib", "cubin")
IMPORTERS = ("--import-onnx", "--import-pytorch", "--import-tvm-relay", "--export-tvm-relay")


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
        self.import_onnx = None       # argument index of --import-onnx
        self.import_pytorch = None    # argument index of --import-pytorch
        self.import_tvm = None        # argument index of --import-tvm-relay
        self.params = None            # --params: (path, argument index, offset)
        self.export_tvm = None        # argument index of --export-tvm-relay
        self.input_shapes = {}        # --input-shape: name -> dims
        self.input_shape_index = {}   # name -> (argument index, offset of the name in it)
        self.debuginfo = False
        self.split = None             # argument index of --split-input-file
        self.verify = None            # argument index of --verify-diagnostics


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
        if name == "--export-tvm-relay" and not eq:
            o.export_tvm = i
            i += 1
            continue
        if name == "--params":
            value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
            o.params = (value, vi, voff)
            continue
        if name in ("--import-onnx", "--import-tvm-relay"):
            if name == "--import-onnx":
                o.import_onnx = i
            else:
                o.import_tvm = i
            if eq:
                take_input(o, value, i, cl, "model")
            elif o.input is None and i + 1 < n and not argv[i + 1].startswith("-"):
                take_input(o, argv[i + 1], i + 1, cl, "model")
                i += 1
            i += 1
            continue
        if name == "--import-pytorch":
            value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
            o.import_pytorch = (value, vi, voff)
            continue
        if name == "--input-shape":
            value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
            parse_input_shape(o, value, vi, voff, cl)
            continue
        if name == "--print-debuginfo" and not eq:
            o.debuginfo = True
            i += 1
            continue
        if name in ("--split-input-file", "--verify-diagnostics"):
            if eq:
                raise cl.error(i, f"'{name}' takes no value")
            if name == "--split-input-file":
                o.split = i
            else:
                o.verify = i
            i += 1
            continue
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
        known = ["--emit", "--target", "--output", "--help", "--version", "--input-shape", "--print-debuginfo",
                 "--split-input-file", "--verify-diagnostics", *IMPORTERS]
        cands = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean '{cands[0]}'?" if cands else ""
        raise cl.error(i, f"unknown option '{name}'{hint}")
    if o.params is not None and o.import_tvm is None:
        raise cl.error(o.params[1], "--params goes with --import-tvm-relay")
    if o.import_tvm is not None or o.export_tvm is not None:
        flag, at = ("--import-tvm-relay", o.import_tvm) if o.import_tvm is not None else ("--export-tvm-relay", o.export_tvm)
        refuse_with(cl, flag, (*codegen_flags(o), ("--import-onnx", o.import_onnx)))
        if o.import_tvm is not None and o.export_tvm is not None:
            raise cl.error(o.export_tvm, "--export-tvm-relay does not go with --import-tvm-relay")
        if o.import_tvm is not None and o.input is None:
            raise cl.error(at, "--import-tvm-relay needs the model's file path")
        return o
    if o.import_onnx is not None:
        check_import_args(o, cl)
        return o
    if o.import_pytorch is not None:
        refuse_with(cl, "--import-pytorch, which writes relay text", (*codegen_flags(o), ("an input file", o.input_index)))
        if o.input_shapes or o.debuginfo:
            raise cl.error(-1, "--input-shape and --print-debuginfo go with --import-onnx")
        return o
    if o.input_shapes or o.debuginfo:
        raise cl.error(-1, "--input-shape and --print-debuginfo go with --import-onnx")
    if o.emit is None:
        raise cl.error(-1, "no output kind: give --emit=llvm|asm|obj|shared-lib|cuda|ptx|cubin")
    if o.emit == "shared-lib" and (o.output is None or o.output == "-"):
        raise cl.error(o.emit_index, "--emit=shared-lib writes a library and its header: give -o FILE.so")
    if o.split is not None and o.emit in BINARY:
        raise cl.error(o.split, f"--split-input-file joins text outputs; it does not go with --emit={o.emit}")
    return o


def codegen_flags(o):
    """The options of code generation, as (flag, argument index or None)."""
    return (("--emit", o.emit_index), ("--target", o.target_index), ("--split-input-file", o.split),
            ("--verify-diagnostics", o.verify))


def refuse_with(cl, mode, options):
    """An error at the first of `options` ((flag, argument index or None))
    that was given: it does not go with `mode`."""
    for flag, idx in options:
        if idx is not None:
            raise cl.error(idx, f"{flag} does not go with {mode}")


def parse_input_shape(o, value, vi, voff, cl):
    """``NAME:1x3x224x224`` ('?' or -1 for a dynamic dimension; NAME may
    itself hold colons: the shape follows the last one)."""
    name, sep, dims = value.rpartition(":")
    if not sep or not name:
        raise cl.error(vi, f"--input-shape expects NAME:DIMS (e.g. x:1x3x224x224), got '{value}'", voff)
    shape = []
    for d in dims.split("x") if dims else []:
        if d in ("?", "-1"):
            shape.append(None)
        elif d.isdigit():
            shape.append(int(d))
        else:
            raise cl.error(vi, f"bad dimension '{d}' in --input-shape (a number, or '?' for a dynamic one)",
                           voff + len(name) + 1)
    o.input_shapes[name] = tuple(shape)
    o.input_shape_index[name] = (vi, voff)


def check_import_args(o, cl):
    if o.input is None:
        raise cl.error(o.import_onnx, "--import-onnx needs the model's file path")
    if o.input == "-":
        raise cl.error(o.input_index, "--import-onnx reads a file path, not stdin (an ONNX model is binary "
                                      "and may keep its weights in files beside it)")
    refuse_with(cl, "--import-onnx, which writes relay text", codegen_flags(o))


def import_onnx(o, cl):
    """The relay text of the ONNX model at o.input."""
    import os

    from ..ir.printer import print_module
    path = o.input
    if not os.path.exists(path):
        raise cl.error(o.input_index, f"could not open input file '{path}': no such file")
    if os.path.isdir(path):
        raise cl.error(o.input_index, f"could not open input file '{path}': it is a directory")
    # errors about the model point at its path on the command line: a binary
    # file has no line and column of its own
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise cl.error(o.import_onnx, "--import-onnx needs the 'onnx' package (pip install onnx)") from None
    from ..frontend.onnx import OnnxImportError, from_onnx, load_model
    from ..ir.diagnostics import DiagnosticError
    try:
        model = load_model(path)
    except OnnxImportError as e:   # an empty file
        raise cl.relocate(o.input_index, e) from None
    except Exception as e:   # a protobuf decode error, a missing external data file
        raise cl.error(o.input_index, f"'{path}' is not a readable ONNX model: {type(e).__name__}: {e}") from None
    weights = {t.name for t in model.graph.initializer}
    names = {vi.name for vi in model.graph.input} - weights
    for name in o.input_shapes:
        if name not in names:
            vi, voff = o.input_shape_index[name]
            raise cl.error(vi, f"--input-shape names '{name}', which is not an input of the model "
                               f"(inputs: {', '.join(sorted(names)) or 'none'})", voff)
    try:
        module, _ = from_onnx(model, shape=o.input_shapes)
    except DiagnosticError as e:   # an OnnxImportError, or a relay op refusing what a node made
        raise cl.relocate(o.input_index, e, f"cannot import '{path}': ") from None
    return print_module(module, debuginfo=o.debuginfo)


def import_pytorch(o, cl, sources):
    """The relay text of the model FACTORY() in FILE.py builds; an import
    error is located at the model's source line, which goes to `sources`
    so that the diagnostic quotes it."""
    import os
    import runpy

    from ..ir.diagnostics import DiagnosticError
    from ..ir.printer import print_module
    value, vi, voff = o.import_pytorch
    path, sep, factory = value.rpartition(":")
    if not sep or not path or not factory.isidentifier():
        raise cl.error(vi, f"--import-pytorch expects FILE.py:FACTORY, got '{value}'", voff)
    if not os.path.isfile(path):
        raise cl.error(vi, f"could not open '{path}': no such file", voff)
    try:
        import torch  # noqa: F401
    except ImportError:
        raise cl.error(vi, "--import-pytorch needs torch (pip install 'tvmd[torch]')", voff) from None
    try:
        namespace = runpy.run_path(path, run_name="__tvmd_import__")
    except Exception as e:   # the user's module failed: say where, without our traceback
        raise cl.error(vi, f"running '{path}' failed: {type(e).__name__}: {e}", voff) from None
    fn = namespace.get(factory)
    if not callable(fn):
        have = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("_"))
        raise cl.error(vi, f"'{path}' defines no function '{factory}' (it has: {', '.join(have) or 'none'})",
                       voff + len(path) + 1)
    try:
        made = fn()
    except Exception as e:
        raise cl.error(vi, f"{factory}() failed: {type(e).__name__}: {e}", voff + len(path) + 1) from None
    from ..frontend.pytorch import from_pytorch
    try:
        if isinstance(made, tuple) and len(made) in (2, 3):
            module, _ = from_pytorch(made[0], example_inputs=tuple(made[1]),
                                     dynamic_shapes=made[2] if len(made) == 3 else None)
        else:
            module, _ = from_pytorch(made)
    except DiagnosticError as e:
        where = e.loc.file_line_col() if e.loc is not None else None
        if where and os.path.isfile(where[0]):
            with open(where[0], encoding="utf-8", errors="replace") as f:
                sources.add(where[0], f.read())
        raise
    except Exception as e:   # torch.export refusing the model, a wrong return value
        raise cl.error(vi, f"cannot import {factory}(): {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                       voff + len(path) + 1) from None
    return print_module(module)


def import_tvm_relay(o, cl, driver):
    """The relay dialect text of the TVM Relay text at o.input."""
    from ..frontend.tvm_relay import import_tvm_relay as read
    from ..frontend.tvm_relay import load_param_dict
    from ..frontend.tvm_relay.params import ParamsError
    from ..ir.printer import print_module
    params = None
    if o.params is not None:
        ppath, pi, poff = o.params
        try:
            with open(ppath, "rb") as f:
                params = load_param_dict(f.read())
        except OSError as e:
            raise cl.error(pi, f"could not read '{ppath}': {e.strerror}", poff) from None
        except ParamsError as e:
            raise cl.error(pi, f"'{ppath}': {e}", poff) from None
    name, text = driver.read_input(o.input, o.input_index)
    return print_module(read(text, name, params))


def export_tvm_relay(o, driver):
    from ..frontend.tvm_relay.writer import export_tvm_relay as write
    from ..parser import parse_module
    fname, text = driver.read_input(o.input or "-", o.input_index)
    return write(parse_module(text, fname))


def resolve_target(o, cl):
    from ..backend.spec import TargetError, parse_target
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
            if o.import_tvm is not None:
                return self.write(import_tvm_relay(o, cl, self), o, cl)
            if o.export_tvm is not None:
                return self.write(export_tvm_relay(o, self), o, cl)
            if o.import_onnx is not None or o.import_pytorch is not None:
                result = import_onnx(o, cl) if o.import_onnx is not None else import_pytorch(o, cl, self.sources)
                return self.write(result, o, cl)
            target = resolve_target(o, cl)
            if o.emit in BINARY and (o.output is None or o.output == "-") and sys.stdout.isatty():
                raise cl.error(o.emit_index, f"refusing to write a binary {o.emit} file to a terminal; "
                                             f"use -o FILE or a pipe")
            fname, text = self.read_input(o.input or "-", o.input_index)
        except DiagnosticError as e:
            self.report(e)
            return 1
        return self.process(text, fname, o, target, cl)

    def process(self, text, fname, o, target, cl) -> int:
        """Translate the input, or each chunk of it (--split-input-file), or
        check its diagnostics (--verify-diagnostics); write what translated."""
        from ..parser.split import join_outputs, split_input
        chunks = split_input(text) if o.split is not None else [(text, 0)]
        outputs, rc = [], 0
        for chunk, line0 in chunks:
            if o.verify is not None:
                ok, out = self.verify_chunk(chunk, line0, fname, o, target, cl)
            else:
                ok, out = self.run_chunk(chunk, line0, fname, o, target, cl)
            if not ok:
                rc = 1
            if out is not None:
                outputs.append(out)
        if o.split is None and o.verify is None:
            if rc or o.emit == "shared-lib":
                return rc
            return self.write(outputs[0], o, cl)
        # like tvm-opt: what did translate goes to stdout even when a chunk
        # failed, and to a file (-o) only when all went well
        result = join_outputs(outputs) if o.split is not None else (outputs[0] if outputs else "")
        if rc == 0 or o.output is None or o.output == "-":
            rc = self.write(result, o, cl) or rc
        return rc

    def translate_chunk(self, chunk, line0, fname, o, target, cl):
        from ..parser import parse_module
        module = parse_module(chunk, fname, line0)
        return self.translate(module, fname, o, target, cl)

    def run_chunk(self, chunk, line0, fname, o, target, cl):
        from ..ir.diagnostics import DiagnosticError
        try:
            return True, self.translate_chunk(chunk, line0, fname, o, target, cl)
        except DiagnosticError as e:
            self.report(e)
        except Exception as e:   # a bug in a backend: a message, not a traceback
            report_internal_error(e)
        return False, None

    def verify_chunk(self, chunk, line0, fname, o, target, cl):
        """Check the chunk's diagnostics against its annotations
        (tvmd.ir.diagnostic_verifier)."""
        from ..ir.diagnostic_verifier import DiagnosticVerifier
        v = DiagnosticVerifier(chunk, fname, line0)
        for e in v.malformed:
            self.report(e)
        try:
            out = v.run(self.translate_chunk, chunk, line0, fname, o, target, cl)
        except Exception as e:   # an internal error is never an expected diagnostic
            report_internal_error(e)
            return False, None
        failures = v.check()
        for e in failures:
            self.report(e)
        return not v.malformed and not failures, out

    def translate(self, module, fname, o, target, cl):
        from ..ir.diagnostics import DiagnosticError
        from ..ir.location import FileLoc
        if o.emit == "shared-lib":
            return self.shared_lib(module, fname, o, target)
        funcs = [op for op in module.body.ops if op.name == "tir.func"]
        if not funcs:
            raise DiagnosticError(FileLoc(fname, 1, 1), "the input has no tir.func to translate "
                                                        "(lower it first: tvm-opt --lower-te-to-tir)")
        if o.emit in ("cuda", "ptx", "cubin"):
            from ..backend.cuda.codegen import generate
            source, _ = generate(module, target)
            if o.emit == "cuda":
                return source
            from ..backend.cuda.compile import CudaCompileError, compile_cuda
            try:
                data = compile_cuda(source, target.arch, o.emit)
            except CudaCompileError as e:
                raise DiagnosticError(FileLoc(fname, 1, 1), f"CUDA compilation failed: {e}") from None
            return data.decode() if o.emit == "ptx" else data
        from ..backend.llvm import jit
        from ..backend.spec import TargetError
        try:
            if o.emit == "llvm":
                return jit.emit_llvm(module, target, 0 if o.opt_level is None else o.opt_level)
            level = 3 if o.opt_level is None else o.opt_level
            if o.emit == "asm":
                return jit.emit_assembly(module, target, level)
            return jit.emit_object(module, target, level)
        except TargetError as e:
            raise cl.error(o.target_index, f"invalid target: {e}", o.target_offset) from None

    def shared_lib(self, module, fname, o, target):
        """Compile the relay model whole and write -o FILE.so and FILE.h;
        returns None (the files are written here)."""
        from ..ir.diagnostics import DiagnosticError
        from ..ir.location import FileLoc
        from ..runtime.build import BuildError, build
        from ..runtime.export import ExportError
        main = module.lookup("main")
        if main is None or main.name != "relay.func":
            raise DiagnosticError(FileLoc(fname, 1, 1), "--emit=shared-lib compiles a relay model: the input "
                                                        "has no relay.func @main")
        opt = 3 if o.opt_level is None else o.opt_level
        try:
            cm = build(module, str(target), opt, progress=False, fallback=False)
            header = cm.export_library(o.output)
        except (BuildError, ExportError) as e:
            raise DiagnosticError(FileLoc(fname, 1, 1), f"cannot export a shared library: {e}") from None
        sys.stderr.write(f"tvm-translate: wrote {o.output} and {header}\n")
        return None

    def write(self, result, o, cl) -> int:
        from ..ir.files import write_atomic, write_atomic_bytes
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
