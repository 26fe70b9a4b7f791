'''Checking the diagnostics a run produces against annotations in its input.

This is what ``--verify-diagnostics`` does in every tool (tvm-opt,
tvm-translate), after MLIR's ``SourceMgrDiagnosticVerifierHandler``.  The
input carries, in ``//`` comments, the diagnostics it must produce::

    relay.func @bad(%x: tensor<4xf32>, %y: tensor<5xf32>) {
      // expected-error@+1 {{cannot be broadcast together}}
      %0 = add(%x, %y)
      %1 = nn.relu(%z) // expected-error {{use of undeclared SSA value name '%z'}}
      return %0
    }

The annotation grammar (one or more per comment line)::

    // expected-SEVERITY[@WHERE] {{TEXT}}

    SEVERITY  error | warning | note | remark
    WHERE     (nothing)  the diagnostic is on this line
              +N / -N    N lines below / above this one   (expected-error@+1)
              below      the next line        (same as @+1)
              above      the previous line    (same as @-1)
    TEXT      a substring of the message; must not be empty

A diagnostic matches an expectation of the same severity on the same line of
the same file whose TEXT occurs in its message; each expectation is
consumed by one diagnostic.  The run fails when a diagnostic (error,
warning or remark, raised or emitted) matches no expectation ("unexpected
error: ..."), when an expectation is left over ("expected error "..." was
not produced"), or when an annotation is malformed (``expected-error`` with
no ``{{...}}``, or empty text).  Notes attached to a diagnostic may be
checked with ``expected-note`` but need not be.

Use::

    v = DiagnosticVerifier(text, filename, line_offset)
    result = v.run(parse_and_process)   # DiagnosticError raised inside is recorded
    failures = v.malformed + v.check()  # [DiagnosticError]; empty when all matched

A chunk of a file split with ``--split-input-file`` passes the line it starts
at (`line_offset`) so the annotations' lines are those of the whole file.
'''

from __future__ import annotations

import re

from .diagnostics import Diagnostic, DiagnosticError, collect
from .location import FileLoc

SEVERITY_RE = r"expected-(error|warning|note|remark)"
_ANNOTATION = re.compile(SEVERITY_RE + r"(@([+-]\d+|above|below))?\s*\{\{(.*?)\}\}")
_SEVERITY = re.compile(SEVERITY_RE)


class Expectation:
    """One ``expected-...`` annotation: the severity, the (1-based, whole
    file) line it targets, the text to find, where the annotation is."""

    __slots__ = ("severity", "line", "text", "loc", "matched")

    def __init__(self, severity, line, text, loc):
        self.severity = severity
        self.line = line
        self.text = text
        self.loc = loc
        self.matched = False

    def __repr__(self):
        return f"Expectation({self.severity}@{self.line} {{{{{self.text}}}}})"


def parse_expectations(text: str, fname: str, line_offset: int = 0):
    """The annotations in `text` (the grammar is in the module docstring).

    Returns ``(expectations, malformed)``: a list of :class:`Expectation` and
    a list of :class:`DiagnosticError` for annotations that cannot be read.
    `line_offset` is the line of the whole file that `text` starts after.
    """
    out, bad = [], []
    for i, line in enumerate(text.split("\n")):
        ci = line.find("//")
        if ci < 0:
            continue
        lineno = line_offset + i + 1
        found = False
        for m in _ANNOTATION.finditer(line, ci):
            found = True
            rel = m.group(3)
            target = lineno
            if rel == "above":
                target = lineno - 1
            elif rel == "below":
                target = lineno + 1
            elif rel:
                target = lineno + int(rel)
            loc = FileLoc(fname, lineno, m.start() + 1)
            if not m.group(4).strip():
                bad.append(DiagnosticError(loc, "empty expected-diagnostic text"))
                continue
            out.append(Expectation(m.group(1), target, m.group(4), loc))
        if not found and _SEVERITY.search(line, ci):
            bad.append(DiagnosticError(FileLoc(fname, lineno, ci + 1),
                                       "malformed expected-diagnostic: write expected-error {{text}}"))
    return out, bad


def match_expectation(d: Diagnostic, expects, fname: str) -> bool:
    """Mark the first unmatched expectation that `d` satisfies; False if none."""
    flc = d.loc.file_line_col()
    if flc is None or flc[0] != fname:
        return False
    for e in expects:
        if e.matched or e.severity != d.severity or flc[1] != e.line:
            continue
        if e.text in d.message:
            e.matched = True
            return True
    return False


class DiagnosticVerifier:
    """Collects the diagnostics of a run over `text` and checks them against
    its annotations (see the module docstring)."""

    def __init__(self, text: str, fname: str, line_offset: int = 0):
        self.fname = fname
        self.expectations, self.malformed = parse_expectations(text, fname, line_offset)
        self.diagnostics: list[Diagnostic] = []

    def run(self, fn, *args, **kwargs):
        """Call ``fn(*args, **kwargs)``, recording the diagnostics it emits
        (warnings, remarks) and the :class:`DiagnosticError` it raises.
        Returns fn's result, or None when it raised a DiagnosticError; any
        other exception propagates."""
        result = None
        raised = []
        with collect() as emitted:
            try:
                result = fn(*args, **kwargs)
            except DiagnosticError as e:
                raised = e.diagnostics
        self.diagnostics.extend(emitted)
        self.diagnostics.extend(raised)
        return result

    def add(self, diagnostics):
        """Record diagnostics produced outside :meth:`run`."""
        self.diagnostics.extend(diagnostics)

    def check(self) -> list[DiagnosticError]:
        """The failures: each unexpected diagnostic, then each expectation
        nothing produced (not counting :attr:`malformed`)."""
        failures = []
        for d in self.diagnostics:
            if not match_expectation(d, self.expectations, self.fname):
                failures.append(DiagnosticError([Diagnostic("error", d.loc, f"unexpected {d.severity}: {d.message}")]))
            for n in d.notes:
                match_expectation(n, self.expectations, self.fname)
        for e in self.expectations:
            if not e.matched:
                failures.append(DiagnosticError(e.loc, f'expected {e.severity} "{e.text}" was not produced'))
        return failures
