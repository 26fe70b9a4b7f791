"""tvm-opt --run-reproducer runs a pipeline stored in the input file: that
pipeline may not read or write files (issue 9).  A crafted reproducer used to
truncate any file the user could write through view-op-graph{output=PATH}."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from tools import tvm_opt  # noqa: E402

REPRO = """relay.func @main(%x: tensor<4xf32>) {{
  %0 = nn.relu(%x)
  return %0
}}

{{-#
  external_resources: {{
    tvmd_reproducer: {{
      pipeline: "{pipeline}"
    }}
  }}
#-}}
"""
PIPELINE_LINE = 9


def repro(tmp_path, pipeline):
    p = tmp_path / "repro.relay"
    p.write_text(REPRO.format(pipeline=pipeline))
    return str(p)


def assert_located_error(r, path, pipeline, needle):
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    col = len('      pipeline: "') + pipeline.index(needle) + 1
    assert lines[0].startswith(f"{path}:{PIPELINE_LINE}:{col}: error: reproducer pipeline may not name files"), \
        r.stderr
    assert lines[1] == f'      pipeline: "{pipeline}"', r.stderr
    assert lines[2] == " " * (col - 1) + "^", r.stderr


def test_view_op_graph_output_cannot_truncate_a_file(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    before = victim.stat()
    pipeline = f"cse,view-op-graph{{output={victim}}}"
    path = repro(tmp_path, pipeline)
    out = tmp_path / "out.relay"
    r = tvm_opt(path, "--run-reproducer", "-o", str(out), cwd=str(tmp_path))
    assert_located_error(r, path, pipeline, "output=")
    assert "'output' of pass 'view-op-graph'" in r.stderr
    assert victim.read_text() == "precious\n"
    assert victim.stat().st_mtime_ns == before.st_mtime_ns
    assert not out.exists()


def test_view_op_graph_default_output_writes_nothing(tmp_path):
    pipeline = "view-op-graph"
    path = repro(tmp_path, pipeline)
    r = tvm_opt(path, "--run-reproducer", "-o", str(tmp_path / "out.relay"), cwd=str(tmp_path))
    assert_located_error(r, path, pipeline, "view-op-graph")
    assert sorted(os.listdir(tmp_path)) == ["repro.relay"]


@pytest.mark.parametrize("pipeline,needle,what", [
    ("apply-schedule{file=/etc/passwd}", "file=", "'file' of pass 'apply-schedule'"),
    ("builtin.module(quantize{dataset=/etc/passwd})", "dataset=", "'dataset' of pass 'quantize'"),
    ("cse,builtin.module(relay.func(fuse-ops),view-op-graph{print-attrs=true output=x.dot})",
     "output=", "'output' of pass 'view-op-graph'"),
])
def test_path_options_are_refused(tmp_path, pipeline, needle, what):
    path = repro(tmp_path, pipeline)
    r = tvm_opt(path, "--run-reproducer", cwd=str(tmp_path))
    assert_located_error(r, path, pipeline, needle)
    assert what in r.stderr
    assert sorted(os.listdir(tmp_path)) == ["repro.relay"]


def test_reproducer_without_files_still_runs(tmp_path):
    path = repro(tmp_path, "cse,view-op-graph{output=-}")
    r = tvm_opt(path, "--run-reproducer", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert 'digraph "main"' in r.stderr
    assert "nn.relu" in r.stdout
    assert sorted(os.listdir(tmp_path)) == ["repro.relay"]


def test_path_options_still_work_on_the_command_line(tmp_path):
    src = tmp_path / "m.relay"
    src.write_text(REPRO.split("{{-#")[0].replace("{{", "{").replace("}}", "}"))
    dot = tmp_path / "g.dot"
    r = tvm_opt(str(src), f"--view-op-graph=output={dot}", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert 'digraph "main"' in dot.read_text()


def test_view_op_graph_writes_atomically(tmp_path, monkeypatch):
    """A failed write leaves the old file whole (write_atomic), never a
    truncated one."""
    from tvmd.dialects.relay.passes import view_op_graph
    from tvmd.ir import files
    target = tmp_path / "g.dot"
    target.write_text("old\n")

    def boom(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files, "write_atomic_bytes", boom)
    from tvmd.ir.diagnostics import DiagnosticError
    with pytest.raises(DiagnosticError):
        view_op_graph.write_graphs([("main", "digraph {}\n")], str(target))
    assert target.read_text() == "old\n"
