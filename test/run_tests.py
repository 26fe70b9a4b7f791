#!/usr/bin/env python3
"""Run the whole test suite: pytest (tests/) and lit (test/lit/).

    python test/run_tests.py [--fuzz] [pytest args...]

Prints each suite's own report, then one line ``N passed, N failed`` that
counts both suites (CI reads it), and exits 1 when anything failed.
``--fuzz`` runs the hypothesis tests with thousands of examples instead of
the quick CI profile.
"""

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def count(xml_path):
    """(passed, failed, skipped) from a JUnit XML report."""
    if not os.path.exists(xml_path):
        return 0, 1, 0    # the suite did not even report: count it as a failure
    root = ET.parse(xml_path).getroot()
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        if tags & {"failure", "error"}:
            failed += 1
        elif "skipped" in tags:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    args = sys.argv[1:]
    env = dict(os.environ)
    if "--fuzz" in args:
        args.remove("--fuzz")
        env["TVMD_FUZZ"] = "1"
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    out = tempfile.mkdtemp(prefix="tvmd-tests-")
    py_xml, lit_xml = os.path.join(out, "pytest.xml"), os.path.join(out, "lit.xml")
    # --capture=sys: Python's output is captured per test, but what native
    # code writes to the process's stderr (an LLVM assertion, glibc's abort
    # message) reaches the log; captured at the fd level it died with the
    # process that aborted, and CI showed only "Fatal Python error: Aborted".
    r1 = subprocess.run([sys.executable, "-m", "pytest", "-q", "--capture=sys", f"--junitxml={py_xml}", *args],
                        cwd=ROOT, env=env)
    r2 = subprocess.run([sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())", "-sv", f"--xunit-xml-output={lit_xml}",
                         os.path.join(ROOT, "test", "lit")], cwd=ROOT, env=env)
    p1, f1, s1 = count(py_xml)
    p2, f2, s2 = count(lit_xml)
    if r1.returncode not in (0, 5) and f1 == 0:   # pytest crashed outside any test
        f1 = 1
    if r2.returncode != 0 and f2 == 0:
        f2 = 1
    print(f"pytest: {p1} passed, {f1} failed, {s1} skipped; lit: {p2} passed, {f2} failed, {s2} unsupported")
    print(f"{p1 + p2} passed, {f1 + f2} failed")
    return 1 if f1 + f2 else 0


if __name__ == "__main__":
    sys.exit(main())
