"""Writing files safely: the one home of atomic writes.

Tools (``-o FILE``, ``--crash-reproducer=FILE``) and the library
(:func:`tvmd.backend.llvm.jit.save_object`) write through a temporary file in
the target's directory and a rename, so a failure part-way leaves the old
content in place, never a truncated file.

* A symlink is written through: its (final) target is replaced atomically and
  the link stays a link.
* A read-only file is refused with :class:`ReadOnlyFileError` (an
  ``OSError``, so the tools' ``cannot write 'F': ...`` handling reports it).
* Temporaries of ours (``.tvmd-XXXXXXXX``) that a killed writer left in the
  target's directory are removed once they are older than
  :data:`STALE_TEMP_SECONDS`; a younger one may belong to a writer that is
  still running and is left alone.
"""

from __future__ import annotations

import errno
import re

TEMP_PREFIX = ".tvmd-"
# tempfile.mkstemp's names: the prefix and 8 characters of [a-z0-9_]
_TEMP_NAME = re.compile(r"^\.tvmd-[a-z0-9_]{8}$")
STALE_TEMP_SECONDS = 3600


class ReadOnlyFileError(PermissionError):
    """The output file exists and is read-only: it is not overwritten."""

    def __init__(self, path: str):
        super().__init__(errno.EACCES, "the file is read-only; not overwriting it", path)


def write_atomic(path: str, text: str):
    """Write `text` (UTF-8) to `path` through a temporary file and a rename,
    so the old content survives any failure."""
    write_atomic_bytes(path, text.encode("utf-8"))


def remove_stale_temporaries(directory: str, max_age: float = STALE_TEMP_SECONDS, now: float | None = None) -> int:
    """Remove our temporaries (``.tvmd-XXXXXXXX`` regular files) in `directory`
    older than `max_age` seconds; returns how many.  Errors are ignored: the
    cleanup is a courtesy, never a reason for a write to fail."""
    import os
    import stat
    import time
    if now is None:
        now = time.time()
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    uid = os.getuid() if hasattr(os, "getuid") else None
    for e in entries:
        if not _TEMP_NAME.match(e.name):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode) or (uid is not None and st.st_uid != uid):
                continue
            if now - st.st_mtime < max_age:
                continue
            os.unlink(e.path)
            removed += 1
        except OSError:
            continue
    return removed


def _is_read_only(path: str, st) -> bool:
    import os
    # no write bit at all (root ignores permissions, so os.access alone would not do), or not writable for us
    return not (st.st_mode & 0o222) or not os.access(path, os.W_OK)


def write_atomic_bytes(path: str, data: bytes):
    """Write `data` to `path` atomically.  An existing file keeps its
    permission bits; a new one gets the umask's.  A symlink is written
    through (its target is replaced); a read-only file is refused
    (:class:`ReadOnlyFileError`).  A path that is not a regular file
    (``/dev/null``, a pipe) is written through, since a rename would replace
    the device."""
    import os
    import stat
    import tempfile
    # write through symlinks: replace the file the link (chain) finally names
    path = os.path.realpath(path) if os.path.islink(path) else path
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:
            f.write(data)
        return
    if st is not None and _is_read_only(path, st):
        raise ReadOnlyFileError(path)
    d = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(d)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=d)
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
