"""The command line as a source of diagnostics.

Errors about arguments (an unknown pass, a bad option, a missing input file)
point into the command line itself, as ``<command line>:1:COL: error: ...``
with the line and a caret, so they look like every other error.
"""

from __future__ import annotations

import shlex


class CommandLine:
    NAME = "<command line>"

    def __init__(self, prog, argv):
        self.argv = list(argv)
        parts, self.offsets = [prog], []
        pos = len(prog) + 1
        for a in self.argv:
            q = shlex.quote(a)
            # a quoted argument's text starts one character later
            self.offsets.append(pos + (1 if q != a and q.startswith("'") else 0))
            parts.append(q)
            pos += len(q) + 1
        self.text = " ".join(parts)

    def loc(self, arg_index: int, offset_in_arg: int = 0):
        from ..ir.location import FileLoc
        if arg_index is None or arg_index < 0:
            return FileLoc(self.NAME, 1, 1)
        return FileLoc(self.NAME, 1, self.offsets[arg_index] + offset_in_arg + 1)

    def error(self, arg_index, message, offset_in_arg=0):
        from ..ir.diagnostics import DiagnosticError
        return DiagnosticError(self.loc(arg_index, offset_in_arg), message)

    def relocate(self, arg_index, diag_error, prefix=""):
        """`diag_error`'s first diagnostic moved onto argument `arg_index`,
        its message after `prefix`, its notes kept: errors about a binary
        input (an ONNX model) point at its path, having no line of their own."""
        d = diag_error.diagnostics[0]
        err = self.error(arg_index, prefix + d.message)
        err.diagnostics[0].notes = d.notes
        return err


# -- what every tool driver shares -----------------------------------------------

def import_onnx(cl, path, arg_index, shapes=None):
    """The relay module of the ONNX model at `path` (argument `arg_index`);
    `shapes`: input name -> (dims, arg index of the --input-shape giving
    them).  Every failure is an error at the model's path or that option."""
    from ..frontend.onnx import from_onnx, load_model
    from ..ir.diagnostics import DiagnosticError
    shapes = shapes or {}
    try:
        model = load_model(path)
    except Exception as e:   # onnx's own parse errors (DecodeError, OSError)
        raise cl.error(arg_index, f"cannot read '{path}' as an ONNX model: {e}") from None
    names = {vi.name for vi in model.graph.input}
    for k, (_, vi) in shapes.items():
        if k not in names:
            raise cl.error(vi, f"the model has no input '{k}' (inputs: {', '.join(sorted(names))})")
    try:
        module, _ = from_onnx(model, shape={k: v for k, (v, _) in shapes.items()} or None)
    except DiagnosticError as e:   # an OnnxImportError, or a relay op refusing what a node made
        raise cl.relocate(arg_index, e, f"cannot import '{path}': ") from None
    return module


def take_value(argv, i, name, eq, value, cl):
    """The value of ``--flag=value`` or ``--flag value`` at argv[i]:
    returns (value, index of its argument, offset in it, next index)."""
    if eq:
        return value, i, len(name) + 1, i + 1
    if i + 1 >= len(argv):
        raise cl.error(i, f"'{name}' needs a value")
    return argv[i + 1], i + 1, 0, i + 2


def take_input(o, arg, i, cl, what="input file"):
    """Record a positional argument as the one input (`o.input`)."""
    if o.input is not None:
        raise cl.error(i, f"more than one {what} ('{o.input}' and '{arg}')")
    o.input, o.input_index = arg, i


class ToolDriver:
    """The command line as a diagnostic source, reporting, reading inputs."""

    PROG = ""

    def __init__(self, argv):
        from ..ir.diagnostics import SourceManager
        self.argv = argv
        self.sources = SourceManager()
        self.cl = CommandLine(self.PROG, argv)
        self.sources.add(CommandLine.NAME, self.cl.text)

    def report(self, diag_error):
        import sys

        from ..ir.diagnostics import render
        for d in diag_error.diagnostics:
            sys.stderr.write(render(d, self.sources) + "\n")

    def read_input(self, path, arg_index):
        """(name, text) of an input file, '-' for stdin; a file that cannot be
        read is reported at its place on the command line."""
        from ..ir.diagnostics import DiagnosticError
        from ..parser import read_source
        try:
            name, text = read_source(path)
        except DiagnosticError as e:
            if e.loc.file_line_col() is None and arg_index is not None:
                raise self.cl.error(arg_index, e.diagnostics[0].message) from None
            raise
        self.sources.add(name, text)
        return name, text


def tool_main(driver_cls, argv=None) -> int:
    """Run a tool's driver: a deep recursion limit for deep IR, and quiet
    exits on Ctrl-C and on a closed output pipe."""
    import os
    import sys
    if argv is None:
        argv = sys.argv[1:]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    try:
        return driver_cls(argv).run()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1


def report_internal_error(exc, what="internal error"):
    """A bug, not a user error: one line saying where, and the traceback
    only when TVMD_DEBUG is set."""
    import os
    import sys
    import traceback
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno} ({tb[-1].name})" if tb else ""
    sys.stderr.write(f"error: {what}: {type(exc).__name__}: {exc}{where}\n")
    if os.environ.get("TVMD_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
