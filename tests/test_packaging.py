"""The package list in pyproject.toml holds every package in the tree: a
missing one installs fine in editable mode and vanishes from a wheel."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = {".venv", "build", "tests", "test", "bench", "examples", "docs", ".git"}


def test_every_package_is_listed():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    listed = set(re.findall(r'^\s*"(tvmd(?:\.[\w.]+)?)",$', text, re.M))
    found = set()
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP and not x.startswith(".") and x != "__pycache__"]
        if "__init__.py" in files:
            rel = os.path.relpath(d, ROOT)
            found.add("tvmd" if rel == "." else "tvmd." + rel.replace(os.sep, "."))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - found == set(), "these listed packages do not exist"


def test_grammar_files_ship_with_the_package():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert '"*" = ["*.lark"]' in text
