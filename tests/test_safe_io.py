"""ir/files.py: atomic writes through symlinks, refusing read-only files,
keeping permissions, and cleaning up temporaries a killed writer left."""

import os
import time

import pytest

from tvmd.ir.files import ReadOnlyFileError, remove_stale_temporaries, write_atomic, write_atomic_bytes


def _names(d):
    return sorted(x.name for x in d.iterdir())


def test_writes_through_a_symlink(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    write_atomic(str(link), "new")
    assert link.is_symlink() and os.readlink(link) == "real.txt"
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert _names(tmp_path) == ["link.txt", "real.txt"]


def test_writes_through_a_symlink_chain_into_another_directory(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    target = tmp_path / "b" / "real.bin"
    target.write_bytes(b"old")
    (tmp_path / "b" / "mid.bin").symlink_to(target)
    link = tmp_path / "a" / "link.bin"
    link.symlink_to(tmp_path / "b" / "mid.bin")
    write_atomic_bytes(str(link), b"\x00new")
    assert target.read_bytes() == b"\x00new"
    assert link.is_symlink() and (tmp_path / "b" / "mid.bin").is_symlink()
    assert _names(tmp_path / "a") == ["link.bin"]
    assert _names(tmp_path / "b") == ["mid.bin", "real.bin"]


def test_refuses_a_read_only_file(tmp_path):
    p = tmp_path / "ro.txt"
    p.write_text("keep me")
    p.chmod(0o444)
    with pytest.raises(ReadOnlyFileError) as e:
        write_atomic(str(p), "clobbered")
    assert isinstance(e.value, OSError)          # the tools' `except OSError` reports it
    assert "read-only" in e.value.strerror
    assert p.read_text() == "keep me"
    assert p.stat().st_mode & 0o777 == 0o444
    assert _names(tmp_path) == ["ro.txt"]


def test_refuses_a_read_only_file_behind_a_symlink(tmp_path):
    p = tmp_path / "ro.txt"
    p.write_text("keep me")
    p.chmod(0o444)
    (tmp_path / "link.txt").symlink_to("ro.txt")
    with pytest.raises(ReadOnlyFileError):
        write_atomic(str(tmp_path / "link.txt"), "clobbered")
    assert p.read_text() == "keep me"
    assert (tmp_path / "link.txt").is_symlink()


def test_keeps_permission_bits_and_new_files_get_the_umask(tmp_path):
    p = tmp_path / "x.sh"
    p.write_text("old")
    p.chmod(0o751)
    write_atomic(str(p), "new")
    assert p.stat().st_mode & 0o777 == 0o751
    old = os.umask(0o027)
    try:
        write_atomic_bytes(str(tmp_path / "fresh.bin"), b"1")
    finally:
        os.umask(old)
    assert (tmp_path / "fresh.bin").stat().st_mode & 0o777 == 0o640


def test_removes_stale_temporaries_but_not_a_running_writers(tmp_path):
    stale = tmp_path / ".tvmd-abc12_xy"
    stale.write_bytes(b"half written")
    an_hour_ago = time.time() - 2 * 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    fresh = tmp_path / ".tvmd-zzzzzzzz"          # another writer, still running
    fresh.write_bytes(b"in progress")
    other = tmp_path / ".tvmd-config"            # not one of our names: never touched
    other.write_text("user file")
    os.utime(other, (an_hour_ago, an_hour_ago))
    write_atomic(str(tmp_path / "out.txt"), "new")
    assert _names(tmp_path) == [".tvmd-config", ".tvmd-zzzzzzzz", "out.txt"]
    assert fresh.read_bytes() == b"in progress"


def test_stale_cleanup_skips_directories_and_links(tmp_path):
    old = time.time() - 2 * 3600
    (tmp_path / ".tvmd-dir00000").mkdir()
    (tmp_path / "victim").write_text("v")
    (tmp_path / ".tvmd-link0000").symlink_to("victim")
    for n in (".tvmd-dir00000", "victim"):
        os.utime(tmp_path / n, (old, old))
    os.utime(tmp_path / ".tvmd-link0000", (old, old), follow_symlinks=False)
    assert remove_stale_temporaries(str(tmp_path)) == 0
    assert _names(tmp_path) == [".tvmd-dir00000", ".tvmd-link0000", "victim"]
    assert remove_stale_temporaries(str(tmp_path / "missing")) == 0


def test_failed_write_leaves_old_content_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "out.txt"
    p.write_text("old")

    def boom(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(str(p), "new")
    assert p.read_text() == "old"
    assert _names(tmp_path) == ["out.txt"]


def test_dev_null_is_written_through():
    write_atomic("/dev/null", "x")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
