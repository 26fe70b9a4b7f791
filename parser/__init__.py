"""Text → IR.  ``parse_module(text, filename)`` is the one entry point.

Raises :class:`tvmd.ir.diagnostics.DiagnosticError` for any bad input, with
the position of the problem; the IR is verified after it is built.
"""

from __future__ import annotations


def parse_module(text: str, filename: str = "<input>", line_offset: int = 0, verify: bool = True,
                 allow_unregistered: bool = False, external: dict | None = None):
    """Parse `text` into a ``builtin.module``.

    `line_offset` shifts reported lines (a chunk of a split file);
    `external`, when given, receives the ``external_resources`` section
    (the crash reproducer's pipeline lives there).
    """
    from lark.exceptions import UnexpectedInput

    from ..ir.diagnostics import DiagnosticError
    from .errors import to_diagnostic
    from .grammar import get_parser
    from .resources import parse_resources, split_resources

    body, res_text, res_line = split_resources(text)
    blobs = {}
    if res_text is not None:
        blobs, ext = parse_resources(res_text, filename, res_line + line_offset)
        if external is not None:
            external.update(ext)
    import gc
    p = get_parser()
    # The parse allocates millions of objects that all survive (the IR);
    # the cyclic collector would rescan them again and again for nothing.
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        module = p.parse(body, filename, line_offset, blobs, allow_unregistered)
    except UnexpectedInput as e:
        raise to_diagnostic(e, body, filename, line_offset, p.terminals) from None
    except RecursionError:
        from ..ir.location import FileLoc
        raise DiagnosticError(FileLoc(filename, 1 + line_offset, 1), "input nests too deeply") from None
    finally:
        if gc_was_on:
            gc.enable()
    if verify:
        from ..ir.verifier import verify as run_verify
        run_verify(module)
    return module


def read_source(path: str):
    """Read a file (or stdin for '-') as text, with a diagnostic, not a
    traceback, for a missing file or bytes that are not UTF-8."""
    import sys

    from ..ir.diagnostics import DiagnosticError
    from ..ir.location import FileLoc, UNKNOWN
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except FileNotFoundError:
        raise DiagnosticError(UNKNOWN, f"could not open input file '{path}': no such file") from None
    except IsADirectoryError:
        raise DiagnosticError(UNKNOWN, f"could not open input file '{path}': it is a directory") from None
    except OSError as e:
        raise DiagnosticError(UNKNOWN, f"could not open input file '{path}': {e.strerror}") from None
    try:
        return name, data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DiagnosticError(FileLoc(name, line, col),
                              f"input is not UTF-8 text (byte 0x{data[e.start]:02x})") from None
