"""tvm-opt: run passes over IR text.

    tvm-opt [file|-] [--PASS[=options] ...] [--pass-pipeline='...'] [-o out]

Imports stay inside functions: ``tvm-opt --help`` must not load the
parser, numpy or any pass.
"""

from __future__ import annotations

import sys

from .cmdline import ToolDriver, take_input, report_internal_error, take_value, tool_main

USAGE = "usage: tvm-opt [file|-] [--PASS[=options] ...] [--pass-pipeline='...'] [-O0..-O3] [-o out]"

FLAGS_HELP = """\
input and output:
  file | -                   input file, or '-' / nothing for stdin
  -o FILE                    write the result to FILE (atomically; the input is never touched)
  --split-input-file         split the input at '// -----' lines and process each chunk alone
  --print-generic            print every op in the generic form
  --print-debuginfo          print each op's location as loc(...)
  --allow-unregistered-dialect  keep ops no dialect defines

passes:
  --PASS[=options]           run a pass, e.g. --fuse-ops='max-depth=8'
  --pass-pipeline=TEXT       e.g. 'builtin.module(fold-constant,fuse-ops{max-depth=8})'
  -O0 -O1 -O2 -O3            standard pipelines, in TVM's order
  --list-passes              list each pass: summary, the op it runs on, options with help
  --verify-each[=false]      verify the IR after every pass (on by default)

debugging:
  --print-ir-before=P[,P]    print the IR before the named passes (stderr)
  --print-ir-after=P[,P]     print the IR after the named passes
  --print-ir-before-all      print the IR before every pass
  --print-ir-after-all       print the IR after every pass
  --print-ir-after-change    only print after a pass that changed the IR
  --print-ir-after-failure   print the IR after a pass fails
  --timing                   time parsing, each pass, verification and printing
  --pass-statistics          print the counters each pass keeps
  --verify-diagnostics       check '// expected-error {{...}}' annotations (@+N, @-N, @above, @below)
  --crash-reproducer=FILE    when a pass fails, write the IR that reached it and the pipeline to FILE
  --run-reproducer           run the pipeline stored in the input file (a reproducer)
"""

BOOL_FLAGS = {
    "--split-input-file", "--print-generic", "--print-debuginfo", "--allow-unregistered-dialect",
    "--list-passes", "--print-ir-before-all", "--print-ir-after-all", "--print-ir-after-change",
    "--print-ir-after-failure", "--timing", "--pass-statistics", "--verify-diagnostics",
    "--run-reproducer", "--help", "-h", "--version",
}
VALUE_FLAGS = {"--pass-pipeline", "-p", "--print-ir-before", "--print-ir-after", "--crash-reproducer",
               "-o", "--output", "--verify-each"}


def print_help(out):
    from ..ir.registry import HIDDEN_PASSES, PASSES, PRESETS, pass_group
    out.write(USAGE + "\n\n")
    out.write("Runs passes over tvmd IR (relay, te, tir, arith) and prints the result.\n\n")
    out.write(FLAGS_HELP)
    # names only: each summary lives on its pass class, and importing the
    # classes would cost --help its speed (--list-passes does import them)
    out.write("\npasses (tvm-opt --list-passes shows what each does, the op it runs on and its options):\n")
    groups = {}
    for name in PASSES:
        if name not in HIDDEN_PASSES:
            groups.setdefault(pass_group(name), []).append("--" + name)
    for group, names in groups.items():
        line = f"  {group + ':':<12}"
        for n in names:
            if len(line) + len(n) + 1 > 100:
                out.write(line.rstrip() + "\n")
                line = " " * 14
            line += n + " "
        out.write(line.rstrip() + "\n")
    out.write("\npresets: " + ", ".join(f"-{k}: {','.join(v) or '(none)'}" for k, v in PRESETS.items()) + "\n")


def list_passes(out):
    """Each pass with its summary, the op it runs on and its options (type,
    default, help), grouped by dialect, as mlir-opt --help lists them."""
    import textwrap

    from ..ir.pass_manager import ANY, MODULE, format_option
    from ..ir.registry import HIDDEN_PASSES, PASSES, get_pass_class, pass_group
    out.write("Passes: --PASS[='option=value ...'] on the command line, PASS{option=value ...} in\n"
              "--pass-pipeline; a pass that runs on an op nests as OP(PASS), e.g. tir.func(tir-unroll).\n")
    group = None
    for name in PASSES:
        if name in HIDDEN_PASSES:
            continue
        if pass_group(name) != group:
            group = pass_group(name)
            out.write(f"\n{group}:\n")
        try:
            cls = get_pass_class(name)
        except RuntimeError as e:
            out.write(f"  --{name}: (internal error: {e})\n")
            continue
        out.write(f"  --{name}: {cls.summary()}\n")
        ops = cls.anchor_ops()
        where = ("any op" if ANY in ops else "builtin.module (the whole module)" if ops == (MODULE,)
                 else ", ".join(ops))
        out.write(f"      runs on: {where}\n")
        rows = [(f"{opt}=<{typ}>", f"{help_} (default: {format_option(default) or 'empty'})")
                for opt, typ, default, help_ in cls.options_help()]
        if cls.EXTRA_OPTIONS:
            key, _, help_ = cls.EXTRA_OPTIONS_HELP.partition(": ")
            rows.append((key, help_))
        for left, right in rows:
            lines = textwrap.wrap(right, 70) or [""]
            if len(left) > 26:
                out.write(f"      {left}\n")
            else:
                out.write(f"      {left:<26} {lines.pop(0)}\n")
            for ln in lines:
                out.write(f"      {'':<26} {ln}\n")


class Options:
    def __init__(self):
        self.input = None
        self.input_index = None
        self.output = None
        self.output_index = None
        self.elements = []         # [(PipelineElement, arg index, offset of the text in the arg)]
        self.flags = set()
        self.print_before = set()
        self.print_after = set()
        self.crash_reproducer = None
        self.verify_each = True


def parse_args(argv, cl):
    from ..ir.pass_manager import PassOptionError, PipelineElement, parse_pipeline
    from ..ir.registry import PASSES, PRESETS
    o = Options()
    i = 0
    n = len(argv)
    while i < n:
        a = argv[i]
        if a == "-" or not a.startswith("-"):
            take_input(o, a, i, cl)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in ("-O0", "-O1", "-O2", "-O3") and not eq:
            # a preset entry may carry options (fuse-ops{opt-level=0})
            for el in parse_pipeline(",".join(PRESETS[name[1:]])) if PRESETS[name[1:]] else []:
                el.offset = el.options_offset = 0
                o.elements.append((el, i, 0))
            i += 1
            continue
        if name in BOOL_FLAGS:
            if eq:
                raise cl.error(i, f"'{name}' takes no value")
            o.flags.add(name)
            i += 1
            continue
        if name in VALUE_FLAGS:
            if name == "--verify-each" and not eq:
                value, vi, voff, i = "true", i, 0, i + 1
            else:
                value, vi, voff, i = take_value(argv, i, name, eq, value, cl)
            if name in ("-o", "--output"):
                o.output, o.output_index = value, vi
            elif name in ("--pass-pipeline", "-p"):
                text = value.strip()
                try:
                    els = parse_pipeline(text)
                except PassOptionError as e:
                    raise cl.error(vi, f"invalid pass pipeline: {e}", voff + e.offset) from None
                for el in els:
                    o.elements.append((el, vi, voff))
            elif name == "--print-ir-before":
                o.print_before.update(x for x in value.split(",") if x)
            elif name == "--print-ir-after":
                o.print_after.update(x for x in value.split(",") if x)
            elif name == "--crash-reproducer":
                o.crash_reproducer = value
            elif name == "--verify-each":
                v = value.lower()
                if v not in ("true", "false", "1", "0"):
                    raise cl.error(vi, "--verify-each takes true or false", voff)
                o.verify_each = v in ("true", "1")
            continue
        if a.startswith("--") and name[2:] in PASSES:
            el = PipelineElement(name[2:], options=value if eq else "", offset=2,
                                 options_offset=len(name) + 1)
            o.elements.append((el, i, 0))
            i += 1
            continue
        if a.startswith("--"):
            import difflib
            cands = difflib.get_close_matches(name[2:], list(PASSES), n=1)
            hint = f"; did you mean '--{cands[0]}'?" if cands else ""
            raise cl.error(i, f"unknown option or pass '{name}'{hint}")
        raise cl.error(i, f"unknown option '{name}'")
    return o


def build_passes(o, cl):
    from ..ir.pass_manager import PassOptionError, instantiate
    from ..ir.registry import get_pass_class
    passes = []
    for el, ai, off in o.elements:
        try:
            passes.extend(instantiate([el], get_pass_class))
        except PassOptionError as e:
            raise cl.error(ai, str(e), off + e.offset) from None
        except RuntimeError as e:
            raise cl.error(ai, f"internal error: {e}", off + el.offset) from None
    known = {p.NAME for _, p in passes}
    for flag, names in (("--print-ir-before", o.print_before), ("--print-ir-after", o.print_after)):
        from ..ir.registry import PASSES
        for nm in names:
            if nm not in PASSES:
                raise cl.error(-1, f"{flag}: '{nm}' is not a pass")
    return passes, known


class Driver(ToolDriver):
    PROG = "tvm-opt"

    def __init__(self, argv):
        super().__init__(argv)
        self.err = sys.stderr
        self.timings = []
        self.stats = {}

    def run(self) -> int:
        argv = self.argv
        if any(a in ("--help", "-h") for a in argv):
            print_help(sys.stdout)
            return 0
        if "--version" in argv:
            from .. import __version__
            sys.stdout.write(f"tvm-opt (tvmd) {__version__}\n")
            return 0
        from ..ir.diagnostics import DiagnosticError
        try:
            o = parse_args(argv, self.cl)
            if "--list-passes" in o.flags:
                list_passes(sys.stdout)
                return 0
            passes, _ = build_passes(o, self.cl)
            fname, text = self.read_input(o.input or "-", o.input_index)
        except DiagnosticError as e:
            self.report(e)
            return 1
        self.o = o
        self.fname = fname
        return self.process(text, passes)

    def process(self, text, passes) -> int:
        import time
        o = self.o
        from ..parser.split import join_outputs, split_input
        chunks = split_input(text) if "--split-input-file" in o.flags else [(text, 0)]
        outputs, rc = [], 0
        t_start = time.perf_counter()
        for chunk, line0 in chunks:
            if "--verify-diagnostics" in o.flags:
                ok, out = self.verify_chunk(chunk, line0, passes)
            else:
                ok, out = self.run_chunk(chunk, line0, passes)
            if not ok:
                rc = 1
            if out is not None:
                outputs.append(out)
        t_out = time.perf_counter()
        result = join_outputs(outputs)
        if rc == 0 or "--split-input-file" in o.flags or "--verify-diagnostics" in o.flags:
            if rc == 0 or o.output is None:
                if not self.write_output(result):
                    rc = 1
        self.timings.append(("Output", time.perf_counter() - t_out))
        if "--timing" in o.flags:
            self.print_timing(time.perf_counter() - t_start)
        if "--pass-statistics" in o.flags:
            self.print_stats()
        return rc

    def write_output(self, text) -> bool:
        o = self.o
        if o.output is None or o.output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
            return True
        from ..ir.files import write_atomic
        try:
            write_atomic(o.output, text)
        except OSError as e:
            self.report(self.cl.error(o.output_index, f"cannot write '{o.output}': {e.strerror}"))
            return False
        return True

    # -- one chunk -------------------------------------------------------------

    def parse_chunk(self, chunk, line0, external=None):
        import time

        from ..parser import parse_module
        t0 = time.perf_counter()
        m = parse_module(chunk, self.fname, line0, allow_unregistered="--allow-unregistered-dialect" in self.o.flags,
                         external=external)
        self.timings.append(("Parser", time.perf_counter() - t0))
        # The parsed IR lives until the process exits: keep the cyclic GC
        # from rescanning it on every collection the passes trigger.
        import gc
        gc.freeze()
        return m

    def pass_manager(self, passes):
        from ..ir.pass_manager import Instrumentation, PassManager
        o = self.o
        instr = Instrumentation(
            print_before=o.print_before, print_after=o.print_after,
            print_before_all="--print-ir-before-all" in o.flags,
            print_after_all="--print-ir-after-all" in o.flags,
            print_after_change="--print-ir-after-change" in o.flags,
            print_after_failure="--print-ir-after-failure" in o.flags,
            print_generic="--print-generic" in o.flags,
            print_debuginfo="--print-debuginfo" in o.flags,
            verify_each=o.verify_each, out=sys.stderr)
        return PassManager(passes, instr)

    def run_chunk(self, chunk, line0, passes):
        from ..ir.diagnostics import DiagnosticError
        from ..ir.pass_manager import PassFailure
        o = self.o
        try:
            external = {}
            module = self.parse_chunk(chunk, line0, external)
            if "--run-reproducer" in o.flags:
                passes = self.reproducer_passes(external, chunk, line0)
            pm = self.pass_manager(passes)
            try:
                pm.run(module)
            finally:
                self.timings.extend(pm.timings)
                for k, v in pm.ctx.stats.items():
                    d = self.stats.setdefault(k, {})
                    for s, n in v.items():
                        d[s] = d.get(s, 0) + n
        except DiagnosticError as e:
            self.report(e)
            return False, None
        except PassFailure as f:
            self.pass_failed(f, chunk, line0, passes, pm)
            return False, None
        import time

        from ..ir.printer import print_module
        t0 = time.perf_counter()
        out = print_module(module, generic="--print-generic" in o.flags, debuginfo="--print-debuginfo" in o.flags)
        self.timings.append(("Printer", time.perf_counter() - t0))
        return True, out

    def reproducer_passes(self, external, chunk="", line0=0):
        """The pipeline a reproducer stores.  It comes from the input file,
        not the user, so it may not name files: a pass option that reads or
        writes a path is refused (with the option located in the file)."""
        from ..ir.diagnostics import DiagnosticError
        from ..ir.location import FileLoc
        from ..ir.pass_manager import PassOptionError, instantiate, parse_pipeline
        from ..ir.registry import get_pass_class
        rep = external.get("tvmd_reproducer")
        if not rep or "pipeline" not in rep:
            raise DiagnosticError(FileLoc(self.fname, 1, 1),
                                  "--run-reproducer: the input has no 'tvmd_reproducer' pipeline in its resources")
        text = rep["pipeline"]
        start = _reproducer_pipeline_start(chunk, text)

        def loc(offset):
            if start is None:
                return FileLoc(self.fname, line0 + 1, 1)
            pos = start + max(0, min(offset, len(text)))
            line = line0 + 1 + chunk.count("\n", 0, pos)
            return FileLoc(self.fname, line, pos - (chunk.rfind("\n", 0, pos) + 1) + 1)

        try:
            elements = parse_pipeline(text)
            # Before instantiate: a pass's validate() may look at its paths.
            bad = _path_option_use(elements, get_pass_class)
            if bad is not None:
                offset, message = bad
                raise DiagnosticError(loc(offset), f"reproducer pipeline may not name files: {message}")
            return instantiate(elements, get_pass_class)
        except PassOptionError as e:
            raise DiagnosticError(loc(e.offset), f"bad reproducer pipeline: {e}") from None

    def ir_before(self, chunk, line0, passes, index):
        """The IR that reached pass `index`: replay the passes before it on a
        fresh parse, so the normal path never pays for snapshots."""
        from ..ir.pass_manager import Instrumentation, PassManager
        module = self.parse_chunk(chunk, line0)
        PassManager(passes[:index], Instrumentation(verify_each=False, out=sys.stderr)).run(module)
        return module

    def pass_failed(self, f, chunk, line0, passes, pm):
        from ..ir.diagnostics import DiagnosticError
        from ..ir.pass_manager import InvalidIRError
        from ..ir.printer import print_module
        exc = f.exc
        internal = not isinstance(exc, DiagnosticError)
        if isinstance(exc, DiagnosticError):
            self.report(exc)
        elif isinstance(exc, InvalidIRError):
            self.err.write(f"error: internal error: pass '{f.pass_.NAME}' produced IR that does not verify:\n")
            self.report(exc.diag_error)
        else:
            report_internal_error(exc, f"internal error in pass '{f.pass_.NAME}'")
        module = None
        if internal or self.o.crash_reproducer:
            try:
                module = self.ir_before(chunk, line0, passes, f.index)
            except Exception:  # replay failed too: fall back to what we have
                module = None
        if internal and module is not None:
            self.err.write(f"note: the IR that reached '{f.pass_.NAME}':\n")
            self.err.write(print_module(module, generic=True))
        if self.o.crash_reproducer and module is not None:
            from ..ir.files import write_atomic
            pipeline = pm.pipeline_text(f.index)
            text = print_module(module, external={"tvmd_reproducer": {"pipeline": pipeline}})
            try:
                write_atomic(self.o.crash_reproducer, text)
                self.err.write(f"note: reproducer written to {self.o.crash_reproducer}; replay it with: "
                               f"tvm-opt {self.o.crash_reproducer} --run-reproducer\n")
            except OSError as e:
                self.err.write(f"error: cannot write the reproducer: {e.strerror}\n")
        elif internal:
            self.err.write("note: rerun with --crash-reproducer=FILE to save a reproducer\n")

    # -- --verify-diagnostics -----------------------------------------------------

    def verify_chunk(self, chunk, line0, passes):
        """Run one chunk under the diagnostic verifier (tvmd.ir.diagnostic_verifier)."""
        from ..ir.diagnostic_verifier import DiagnosticVerifier
        from ..ir.diagnostics import DiagnosticError
        from ..ir.pass_manager import InvalidIRError, PassFailure
        v = DiagnosticVerifier(chunk, self.fname, line0)
        for e in v.malformed:
            self.report(e)
        pm = None

        def parse_and_run():
            nonlocal pm
            module = self.parse_chunk(chunk, line0)
            pm = self.pass_manager(passes)
            try:
                pm.run(module)
            except PassFailure as f:
                if isinstance(f.exc, DiagnosticError):
                    raise f.exc from None
                if isinstance(f.exc, InvalidIRError):
                    raise f.exc.diag_error from None
                raise
            from ..ir.printer import print_module
            return print_module(module, generic="--print-generic" in self.o.flags)

        try:
            out = v.run(parse_and_run)
        except PassFailure as f:   # an internal error, not a diagnostic
            self.pass_failed(f, chunk, line0, passes, pm)
            return False, None
        failures = v.check()
        for e in failures:
            self.report(e)
        return not v.malformed and not failures, out

    # -- reports ---------------------------------------------------------------

    def print_timing(self, total):
        agg = {}
        for name, t in self.timings:
            agg[name] = agg.get(name, 0.0) + t
        total = max(total, sum(agg.values()))
        w = self.err.write
        w("===" + "-" * 73 + "===\n")
        w(" " * 26 + "... Execution time report ...\n")
        w("===" + "-" * 73 + "===\n")
        w(f"  Total Execution Time: {total:.4f} seconds\n\n")
        w("  ----Wall Time----  ----Name----\n")
        for name, t in agg.items():
            w(f"  {t:8.4f} ({100 * t / total if total else 0:5.1f}%)  {name}\n")
        rest = total - sum(agg.values())
        w(f"  {rest:8.4f} ({100 * rest / total if total else 0:5.1f}%)  Rest\n")
        w(f"  {total:8.4f} (100.0%)  Total\n")

    def print_stats(self):
        w = self.err.write
        w("===" + "-" * 73 + "===\n")
        w(" " * 26 + "... Pass statistics report ...\n")
        w("===" + "-" * 73 + "===\n")
        for name, d in self.stats.items():
            w(f"'{name}' Pass\n")
            for s, n in d.items():
                w(f"  (S) {n:8d} {s}\n")


def _reproducer_pipeline_start(chunk, text):
    """Where the reproducer's pipeline string starts in the chunk, or None."""
    import re
    m = re.search(r'\btvmd_reproducer\s*:\s*\{', chunk)
    while m is not None:
        p = re.compile(r'\bpipeline\s*:\s*"').search(chunk, m.end())
        if p is None:
            return None
        if chunk.startswith(text + '"', p.end()):
            return p.end()
        m = p
    return None


def _path_option_use(elements, registry_get):
    """The first use of a path option (see ``option(path=...)`` in
    ir/pass_manager.py) in a parsed pipeline: (offset in the pipeline text,
    message), or None.  A "read" option is allowed empty (no file); a
    "write" option only as "-" (stderr), since its pass writes files even at
    its default."""
    from ..ir.pass_manager import split_options
    for el in elements:
        if el.nested is not None:
            bad = _path_option_use(el.nested, registry_get)
            if bad is not None:
                return bad
            continue
        cls = registry_get(el.name)
        if cls is None:
            continue
        given = {key: (value, off) for key, value, off in split_options(el.options)}
        for name, _typ, f in cls.option_fields():
            kind = f.metadata.get("path")
            if not kind:
                continue
            key = name.replace("_", "-")
            if key in given:
                value, off = given[key]
                if (kind == "write" and value == "-") or (kind == "read" and value == ""):
                    continue
                return (el.options_offset + off,
                        f"option '{key}' of pass '{el.name}' names a file ('{value}'); "
                        f"run the pass from the command line instead")
            if kind == "write":
                return (el.offset,
                        f"pass '{el.name}' writes files (its '{key}' option); "
                        f"give {key}=- to print to stderr, or run the pass from the command line")
    return None


def main(argv=None) -> int:
    return tool_main(Driver, argv)


if __name__ == "__main__":
    sys.exit(main())
