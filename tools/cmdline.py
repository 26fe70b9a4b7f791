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


def write_atomic(path: str, text: str):
    """Write `text` to `path` through a temporary file and a rename, so the
    old content survives any failure."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str, data: bytes):
    import os
    import stat
    import tempfile
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        # /dev/null, a pipe: write through it; a rename would replace the device
        with open(path, "wb") as f:
            f.write(data)
        return
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tvmd-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if st is not None:
            mode = st.st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
