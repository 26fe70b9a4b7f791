# lit configuration for tvmd's FileCheck tests.
#
# RUN lines call the installed tools (tvm-opt, tvm-translate, tvm-run) and
# FileCheck (the `filecheck` package).  `not` is lit's own builtin.
import os
import shutil
import sys

import lit.formats

config.name = "tvmd"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".relay", ".te", ".tir", ".mlir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, ".lit_out")


# The tools installed beside the Python running lit come first, so that
# `.venv/bin/lit` works without activating the virtual environment.
BIN = os.path.dirname(sys.executable)
SEARCH = os.pathsep.join([BIN, os.environ.get("PATH", "")])


def tool(name, module):
    """The installed console script, else the module run by this Python."""
    path = shutil.which(name, path=SEARCH)
    if path:
        return path
    return f"{sys.executable} -m {module}"


# Word-bounded patterns so that e.g. `tvm-opt` inside a longer word is left alone.
config.substitutions.append((r"(?<![\w/.-])tvm-opt(?![\w.-])", tool("tvm-opt", "tvmd.tools.opt_main")))
config.substitutions.append((r"(?<![\w/.-])tvm-translate(?![\w.-])", tool("tvm-translate", "tvmd.tools.translate_main")))
config.substitutions.append((r"(?<![\w/.-])tvm-run(?![\w.-])", tool("tvm-run", "tvmd.tools.run_main")))
config.substitutions.append((r"(?<![\w/.-])FileCheck(?![\w.-])", shutil.which("filecheck", path=SEARCH) or "filecheck"))
config.substitutions.append(("%python", sys.executable))

config.environment["PATH"] = SEARCH
for var in ("HOME", "TMPDIR", "PYTHONPATH", "TVMD_DEBUG"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

if shutil.which("nvcc"):
    config.available_features.add("nvcc")

import importlib.util  # noqa: E402

if importlib.util.find_spec("torch") is not None:   # the [torch] extra: --import-pytorch
    config.available_features.add("torch")
