"""What a user installs: a wheel built from a copy of the source tree ships
every package of the tree (every directory with an ``__init__.py``, every
module in it) and every ``.lark`` grammar, all under ``tvmd/``, with the
console scripts.  An editable install hides a package missing from
pyproject's list; only a built wheel shows it.

The wheel is built with ``pip wheel --no-build-isolation`` (offline, with
the setuptools that the ``test`` extra installs: >= 70.1 builds wheels on
its own).
"""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# not part of the package: never shipped, never searched for packages
SKIP = {".venv", "venv", "build", "dist", "tests", "test", "bench", "examples", "docs", ".git", "__pycache__",
        ".lit_out", ".hypothesis", ".pytest_cache"}
IGNORE = shutil.ignore_patterns(".venv", "venv", ".git", "__pycache__", ".lit_out", ".hypothesis",
                                ".pytest_cache", "*.egg-info", "build", "dist")


def source_tree():
    """(packages, .lark files, .py modules of packages) of the source tree,
    as paths relative to the root."""
    packages, grammars, modules = [], [], []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIP and not x.startswith("."))
        rel = os.path.relpath(d, ROOT)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        is_pkg = "__init__.py" in files
        if is_pkg:
            packages.append(rel)
        for f in files:
            if f.endswith(".lark"):
                grammars.append(rel + f)
            elif f.endswith(".py") and is_pkg:
                modules.append(rel + f)
    return packages, grammars, modules


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """(kind, the set of file names the built artifact holds, entry points text)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    out = tmp / "out"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(out), str(src)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = list(out.glob("tvmd-*.whl"))
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        eps = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = z.read(eps[0]).decode() if eps else ""
    return "wheel", names, entry_points


def test_the_source_tree_is_seen():
    packages, grammars, modules = source_tree()
    for pkg in ("", "ir/", "parser/", "tools/", "testing/", "backend/", "backend/llvm/", "dialects/relay/passes/"):
        assert pkg in packages
    assert "parser/core.lark" in grammars and "dialects/relay/relay.lark" in grammars


def test_every_package_module_and_grammar_ships(shipped):
    kind, names, _ = shipped
    packages, grammars, modules = source_tree()
    missing_pkgs = sorted(p for p in packages if f"tvmd/{p}__init__.py" not in names)
    assert missing_pkgs == [], f"packages missing from the {kind} (add them to pyproject's package list)"
    missing = sorted(m for m in modules + grammars if f"tvmd/{m}" not in names)
    assert missing == [], f"files missing from the {kind}"
    assert "tvmd/testing/__init__.py" in names and "tvmd/backend/llvm/jit.py" in names
    # everything lives under tvmd/: no top-level `parser` or `tools` module
    stray = sorted(n for n in names if not n.startswith("tvmd/") and ".dist-info/" not in n)
    assert stray == []


def test_console_scripts_ship(shipped):
    _, _, entry_points = shipped
    for script, target in (("tvm-opt", "tvmd.tools.opt_main:main"),
                           ("tvm-translate", "tvmd.tools.translate_main:main"),
                           ("tvm-run", "tvmd.tools.run_main:main")):
        assert f"{script} = {target}" in entry_points
