"""Run the command-line tools the way a user does (in a subprocess)."""

import os
import shutil
import subprocess
import sys

BIN = os.path.dirname(sys.executable)


def tool_cmd(name, module):
    path = shutil.which(name, path=os.pathsep.join([BIN, os.environ.get("PATH", "")]))
    return [path] if path else [sys.executable, "-m", module]


def run_tool(name, module, args, stdin=None, cwd=None, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(tool_cmd(name, module) + list(args), input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=e, timeout=300)


def tvm_opt(*args, **kw):
    return run_tool("tvm-opt", "tvmd.tools.opt_main", args, **kw)
