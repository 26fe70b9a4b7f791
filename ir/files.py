"""Writing files safely: the one home of atomic writes.

Tools (``-o FILE``, ``--crash-reproducer=FILE``) and the library
(:func:`tvmd.backend.llvm.jit.save_object`) write through a temporary file in
the target's directory and a rename, so a failure part-way leaves the old
content in place, never a truncated file.
"""

from __future__ import annotations


def write_atomic(path: str, text: str):
    """Write `text` (UTF-8) to `path` through a temporary file and a rename,
    so the old content survives any failure."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str, data: bytes):
    """Write `data` to `path` atomically.  An existing file keeps its
    permission bits; a new one gets the umask's.  A path that is not a
    regular file (``/dev/null``, a pipe) is written through, since a rename
    would replace the device."""
    import os
    import stat
    import tempfile
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
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
