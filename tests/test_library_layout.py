"""The library never imports tools/ (README, Layout: tools/ are thin layers over
the library, which must work without them).  Checked on the AST of
every module of the package outside tools/, relative imports resolved."""

import ast
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from import_names import imported_names  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {".venv", "build", "tests", "test", "bench", "examples", "docs", "tools", "__pycache__"}


def package_modules():
    """(dotted package of the file, path) for every .py file of the tvmd
    package tree except tools/."""
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIP and not x.startswith(".")
                         and os.path.exists(os.path.join(d, x, "__init__.py")))
        rel = os.path.relpath(d, ROOT)
        pkg = "tvmd" if rel == "." else "tvmd." + rel.replace(os.sep, ".")
        for f in sorted(files):
            if f.endswith(".py"):
                yield pkg, os.path.join(d, f)


def imported_modules(source, pkg):
    """Every module an import statement in `source` names, as absolute
    dotted names (``from .. import tools`` counts as ``tvmd.tools``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        out.extend(imported_names(node, pkg))
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            # importlib.import_module("tvmd.tools...") and lazy-import helpers
            v = node.args[0].value
            if isinstance(v, str) and v.startswith("tvmd."):
                out.append(v)
    return out


def is_tools(mod):
    return mod == "tvmd.tools" or mod.startswith("tvmd.tools.")


def test_the_checker_sees_every_spelling():
    pkg = "tvmd.backend.llvm"
    for src in ("from ...tools.cmdline import write_atomic", "from ... import tools", "import tvmd.tools.opt_main",
                "from tvmd.tools import cmdline", "def f():\n    from ...tools import cmdline",
                "importlib.import_module('tvmd.tools.cmdline')"):
        assert any(is_tools(m) for m in imported_modules(src, pkg)), src
    for src in ("from ...ir.files import write_atomic", "from .. import spec", "import tools"):
        assert not any(is_tools(m) for m in imported_modules(src, pkg)), src


def test_library_does_not_import_tools():
    mods = list(package_modules())
    assert any(p.endswith(os.path.join("backend", "llvm", "jit.py")) for _, p in mods)
    offenders = []
    for pkg, path in mods:
        with open(path, encoding="utf-8") as f:
            src = f.read()
        for m in imported_modules(src, pkg):
            if is_tools(m):
                offenders.append(f"{os.path.relpath(path, ROOT)}: {m}")
    assert offenders == [], "the library imports tools/; move the code into the library"
