"""Every module of the tvmd package imports on its own, first, in a fresh
interpreter: no import cycle that only works in one import order, no
module that relies on another having been imported before it.

Modules are found by walking the package's file tree (every folder with
an ``__init__.py`` under the package root, every ``.py`` file in it), so a
new module is checked without being listed here.  Nothing is skipped:

* a module that needs an optional dependency (pycuda, torch, ...) that is
  not installed must fail with exactly ``ModuleNotFoundError`` naming that
  dependency; with the dependency installed it must import;
* a script whose file name is not a module name (``tools/tvm-opt.py``) is
  checked by running its import statements alone.

To stay fast, one driver process (a fresh interpreter that has imported no
tvmd module) imports the third-party libraries tvmd requires and then
forks one child per module; each child imports its module and reports.
Where fork is unavailable each module gets its own interpreter.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from import_names import imported_names  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "tvmd"

# Optional dependencies (pyproject's extras and what tvmd uses when present):
# a module may fail to import only with ModuleNotFoundError for one of these,
# and only when it is not installed.
OPTIONAL = {"pycuda", "torch", "onnx", "onnxruntime", "xgboost", "dask", "distributed", "scipy"}

# The required dependencies, imported once by the driver before it forks.
PRELOAD = ("numpy", "lark", "llvmlite", "llvmlite.binding")


def package_files():
    """(module name or None for a script, path) of every .py file of the
    package tree: the root and every folder below it that has an
    __init__.py (tests/, test/, bench/, docs/ have none and are not part
    of the package)."""
    out = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".")
                         and os.path.exists(os.path.join(d, x, "__init__.py")))
        rel = os.path.relpath(d, ROOT)
        pkg = PACKAGE if rel == "." else PACKAGE + "." + rel.replace(os.sep, ".")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            stem = f[:-3]
            path = os.path.join(d, f)
            if stem == "__init__":
                out.append((pkg, path))
            elif stem.isidentifier():
                out.append((f"{pkg}.{stem}", path))
            else:
                out.append((None, path))   # a script (tvm-opt.py): not importable by name
    return out


def script_imports(path):
    """The import statements of a script, as source to run alone."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    nodes = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return "\n".join(ast.unparse(n) for n in nodes)


DRIVER = textwrap.dedent(r'''
    import importlib, json, os, sys, traceback

    jobs, preload = json.loads(sys.stdin.read())
    for m in preload:
        try:
            importlib.import_module(m)
        except ImportError:
            pass
    assert not [m for m in sys.modules if m == "tvmd" or m.startswith("tvmd.")], "driver imported tvmd"

    def attempt(kind, what):
        try:
            if kind == "module":
                importlib.import_module(what)
            else:
                exec(compile(what, "<script imports>", "exec"), {"__name__": "__script_imports__"})
            return {"ok": True}
        except BaseException as e:
            return {"ok": False, "type": type(e).__name__, "name": getattr(e, "name", None),
                    "msg": str(e), "tb": traceback.format_exc()}

    results = []
    use_fork = hasattr(os, "fork")
    for kind, what in jobs:
        if not use_fork:
            results.append(attempt(kind, what))   # the parent runs one at a time; see run_driver
            continue
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            data = json.dumps(attempt(kind, what)).encode()
            with os.fdopen(w, "wb") as f:
                f.write(data)
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        results.append(json.loads(data) if data else
                       {"ok": False, "type": "crash", "name": None, "msg": f"child exit status {status}", "tb": ""})
    print(json.dumps(results))
''')


def run_driver(jobs):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, "-c", DRIVER]
    if hasattr(os, "fork"):
        p = subprocess.run(cmd, input=json.dumps([jobs, list(PRELOAD)]), capture_output=True,
                           text=True, timeout=300, env=env, cwd=os.path.dirname(ROOT))
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[-1])
    results = []
    for job in jobs:                        # no fork: a fresh interpreter each
        p = subprocess.run(cmd, input=json.dumps([[job], []]), capture_output=True, text=True,
                           timeout=120, env=env, cwd=os.path.dirname(ROOT))
        assert p.returncode == 0, p.stderr
        results.extend(json.loads(p.stdout.splitlines()[-1]))
    return results


def optional_missing(name):
    """Whether `name` (a ModuleNotFoundError's name) is an optional
    dependency that is not installed."""
    import importlib.util
    top = (name or "").split(".")[0]
    if top not in OPTIONAL:
        return False
    try:
        return importlib.util.find_spec(top) is None
    except (ImportError, ValueError):
        return True


@pytest.fixture(scope="module")
def import_results():
    files = package_files()
    jobs = [("module", m) if m else ("script", script_imports(p)) for m, p in files]
    return files, run_driver(jobs)


def test_discovery_sees_the_package():
    names = {m for m, _ in package_files() if m}
    for m in ("tvmd", "tvmd.conversion.relay_to_te.topi_nn", "tvmd.conversion.relay_to_te.strategies",
              "tvmd.backend.llvm", "tvmd.testing.relay_programs", "tvmd.tools.opt_main"):
        assert m in names, m
    assert not any(".tests." in m or ".bench." in m for m in names)
    scripts = {os.path.relpath(p, ROOT) for m, p in package_files() if m is None}
    # the only files that are not modules are the tools' scripts
    assert all(s.startswith("tools" + os.sep) for s in scripts), scripts


def test_discovery_matches_the_packages_pyproject_installs():
    """The walk finds exactly the packages pyproject lists: a folder the
    walk skips (no __init__.py) is not installed either."""
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
    found = {m for m, p in package_files() if m and p.endswith("__init__.py")}
    assert found == listed


def test_every_module_imports_alone(import_results):
    files, results = import_results
    assert len(results) == len(files)
    failures = []
    for (mod, path), r in zip(files, results):
        if r["ok"]:
            continue
        if excused(r):
            continue   # exactly a missing optional dependency
        what = mod or os.path.relpath(path, ROOT)
        failures.append(f"{what}: {r['type']}: {r['msg']}\n{r['tb']}")
    assert not failures, f"{len(failures)} module(s) fail to import on their own:\n\n" + "\n".join(failures)


def excused(r):
    """Whether a failed import is excused: exactly a missing optional dependency."""
    return r["type"] == "ModuleNotFoundError" and optional_missing(r["name"])


def test_only_a_missing_optional_dependency_is_excused():
    """The driver reports what failed, and the rule above excuses exactly
    ModuleNotFoundError for an optional dependency that is not installed."""
    import importlib.util
    assert not optional_missing("numpy") and not optional_missing("tvmd.nothing") and not optional_missing(None)
    jobs = [("script", "import numpy.no_such_module_xyz"),
            ("script", "from tvmd.ir import no_such_name_xyz"),
            ("script", "raise ModuleNotFoundError('no module', name='pycuda')")]
    r_np, r_name, r_fake = run_driver(jobs)
    assert r_np["type"] == "ModuleNotFoundError" and r_np["name"] == "numpy.no_such_module_xyz"
    assert not excused(r_np)
    assert r_name["type"] == "ImportError" and not excused(r_name)
    assert r_fake["name"] == "pycuda"
    assert excused(r_fake) == (importlib.util.find_spec("pycuda") is None)


def _top_level_imports(path, mod, is_pkg):
    """The tvmd modules `path` imports at module level (not inside
    functions), relative imports resolved; `from . import x` names x."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    pkg = mod if is_pkg else mod.rpartition(".")[0]
    out = set()
    for node in tree.body:
        out.update(m for m in imported_names(node, pkg) if m.split(".")[0] == PACKAGE)
    return out


def test_relay_to_te_module_imports_are_acyclic():
    """The compute registry, the topi_* modules and the schedules import
    each other without a cycle (module-level imports)."""
    prefix = "tvmd.conversion.relay_to_te"
    files = [(m, p) for m, p in package_files() if m and (m == prefix or m.startswith(prefix + "."))]
    mods = {m for m, _ in files}
    graph = {m: sorted(x for x in _top_level_imports(p, m, p.endswith("__init__.py")) if x in mods and x != m)
             for m, p in files}
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for x in graph[m]:
            if state.get(x) == "open":
                cyc = stack[stack.index(x):] + [x]
                raise AssertionError("import cycle: " + " -> ".join(cyc))
            if x not in state:
                visit(x, stack + [x])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


TABLE_ORDER = r"""
import importlib, json, sys
for m in sys.argv[1:]:
    importlib.import_module("tvmd.conversion.relay_to_te." + m)
from tvmd.conversion.relay_to_te.registry import computes
print(json.dumps(sorted((k, f.__module__ + "." + f.__qualname__) for k, f in computes().items())))
"""


def test_compute_table_does_not_depend_on_import_order():
    """Each compute module registers only its own entries: whichever module
    is imported first, the complete table is the same."""
    orders = [["registry"], ["topi_nn"], ["topi_image", "topi_qnn"], ["schedules_cuda", "topi_transform", "strategies"],
              ["pass_"]]
    tables = []
    for order in orders:
        p = subprocess.run([sys.executable, "-c", TABLE_ORDER, *order], capture_output=True, text=True,
                           timeout=120, cwd=os.path.dirname(ROOT))
        assert p.returncode == 0, p.stderr
        tables.append(json.loads(p.stdout))
    assert all(t == tables[0] for t in tables)
    table = dict(tables[0])
    assert table["nn.conv2d"] == "tvmd.conversion.relay_to_te.topi_nn.conv2d"
    assert len(table) > 150


def test_a_name_is_registered_once():
    from tvmd.conversion.relay_to_te import registry
    registry.computes()

    def other(e, op, args):
        raise AssertionError

    with pytest.raises(ValueError, match="registered twice"):
        registry.strategy("nn.conv2d")(other)
    assert registry.lookup("nn.conv2d").__module__ == "tvmd.conversion.relay_to_te.topi_nn"
