"""tvm-tune: AutoTVM over te templates.

    tvm-tune --space template.te

``--space`` prints the config space of each te.func with knobs, as AutoTVM
printed ``task.config_space``: each knob, its candidates, its length and
default, and the total.  Bad knobs are located errors.  (Search,
measurement and tuning logs are still to come.)
"""

from __future__ import annotations

import sys

from .cmdline import ToolDriver, report_internal_error, take_input, tool_main

USAGE = "usage: tvm-tune --space template.te"
HELP = """Prints the config space of AutoTVM templates: te functions whose schedule ops
take knobs, #tune.knob<"NAME", [CANDIDATES], DEFAULT>, in place of numbers.

  --space FILE         print each template's knobs (candidates, length, default) and
                       the size of its space
  --help, --version"""


class Options:
    def __init__(self):
        self.space = False
        self.input = None
        self.input_index = None


def parse_args(argv, cl) -> Options:
    o = Options()
    for i, a in enumerate(argv):
        if a == "--space":
            o.space = True
        elif a.startswith("-") and a != "-":
            raise cl.error(i, f"unknown option '{a}'")
        else:
            take_input(o, a, i, cl, "template")
    if not o.space:
        raise cl.error(-1, "nothing to do: give --space (tuning itself is not implemented yet)")
    if o.input is None:
        raise cl.error(-1, "no template given")
    return o


class Driver(ToolDriver):
    PROG = "tvm-tune"

    def run(self) -> int:
        argv = self.argv
        if any(a in ("--help", "-h") for a in argv):
            sys.stdout.write(USAGE + "\n\n" + HELP + "\n")
            return 0
        if "--version" in argv:
            from .. import __version__
            sys.stdout.write(f"tvm-tune (tvmd) {__version__}\n")
            return 0
        from ..ir.diagnostics import DiagnosticError
        try:
            o = parse_args(argv, self.cl)
            fname, text = self.read_input(o.input, o.input_index)
            from ..autotvm.space import templates
            from ..parser import parse_module
            found = templates(parse_module(text, fname))
            if not found:
                raise self.cl.error(o.input_index, f"'{o.input}' has no te.func with knobs "
                                                   f"(#tune.knob<\"NAME\", [CANDIDATES]>)")
            sys.stdout.write("\n".join(space.describe() for _, space in found) + "\n")
            return 0
        except DiagnosticError as e:
            self.report(e)
            return 1
        except Exception as e:   # a bug: one line saying where, not a traceback
            report_internal_error(e)
            return 1


def main(argv=None) -> int:
    return tool_main(Driver, argv)


if __name__ == "__main__":
    sys.exit(main())
