"""Passes, pipelines and the pass manager.

A pass is a dataclass whose fields are its options.  Like MLIR's
``OperationPass<OpT>``, a pass class says which op it runs on (``OP``);
its docstring's first line is its one-line summary (``--list-passes``), and
each option carries its help text::

    @dataclass
    class Unroll(ModulePass):
        \"\"\"Unroll loops marked unrolled (and small constant loops).\"\"\"

        NAME = "tir-unroll"
        OP = "tir.func"
        max_step: int = option(64, "unroll an unrolled loop of at most this many steps")

        def run_on(self, func, ctx): ...

``OP`` is an op name (or a tuple of names) for a pass that works one op at
a time: it implements ``run_on(op, ctx)``, and ``run(module, ctx)`` runs
that on each such op of the module (a pass may override ``run`` to do
module-wide work around it).  ``OP = "builtin.module"`` (the default) is a
pass that must see the whole module (it adds or removes functions, or
follows calls): it implements ``run``.  ``OP = ANY`` is op-agnostic: it runs
on whatever op it is given.

Option text follows MLIR: ``--fuse-ops='max-depth=8 opt-level=1'`` on the
command line, ``fuse-ops{max-depth=8}`` in a pipeline; list values are
comma-separated.  A pass may name a dict field ``EXTRA_OPTIONS`` to collect
``key=value`` entries that are not field names (ConvertLayout's
``nn.conv2d=NHWC``).

Pipeline grammar (``--pass-pipeline``)::

    pipeline := element ("," element)*
    element  := NAME ["{" options "}"] | ANCHOR "(" pipeline ")"

An anchor (``builtin.module(...)``, ``relay.func(...)``, ``tir.func(...)``)
runs the nested pipeline on each op of that name in the module.  The anchors
a pipeline may name are ``builtin.module`` and the ops registered passes
declare; nesting a pass under an op it does not run on (a tir pass under
``relay.func``, or a whole-module pass under any function) is an error at
that pass's position in the pipeline text.  A function pass written at the
top level runs on every function of its kind (MLIR's implicit nesting).
"""

from __future__ import annotations

import dataclasses
import time
import typing
from dataclasses import dataclass
from typing import ClassVar

from .diagnostics import DiagnosticError
from .location import FileLoc


class PassOptionError(Exception):
    """Bad pipeline or option text; `offset` indexes into that text."""

    def __init__(self, message, offset=0):
        super().__init__(message)
        self.offset = offset


MODULE = "builtin.module"
ANY = "*"            # OP of an op-agnostic pass


def option(default, help: str, path=False, **kw):
    """A pass option: a dataclass field with its ``--list-passes`` help.
    A list or dict default is copied for each instance.

    `path` marks an option whose value names a file the pass reads (True or
    "read") or writes ("write": the pass writes files whatever the value, bar
    "-" for stderr).  A pipeline from an untrusted source (a reproducer) may
    not use them (tvm-opt --run-reproducer refuses them)."""
    meta = {"help": help}
    if path:
        meta["path"] = "write" if path == "write" else "read"
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(default_factory=lambda d=default: type(d)(d), metadata=meta, **kw)
    return dataclasses.field(default=default, metadata=meta, **kw)


@dataclass
class Pass:
    """Base class of every pass (see the module docstring)."""

    NAME: ClassVar[str] = ""
    OP: ClassVar[str | tuple[str, ...] | None] = MODULE
    EXTRA_OPTIONS: ClassVar[str | None] = None
    # help for the KEY=VALUE entries EXTRA_OPTIONS collects
    EXTRA_OPTIONS_HELP: ClassVar[str] = ""

    # -- what it runs on ---------------------------------------------------------

    @classmethod
    def anchor_ops(cls) -> tuple[str, ...]:
        """The op names this pass runs on (``("builtin.module",)`` for a
        whole-module pass, ``("*",)`` for an op-agnostic one)."""
        op = cls.OP
        if op is None:
            return (MODULE,)
        return (op,) if isinstance(op, str) else tuple(op)

    @classmethod
    def runs_on(cls, anchor: str) -> bool:
        """May this pass be nested under `anchor`?"""
        ops = cls.anchor_ops()
        return ANY in ops or anchor in ops

    @classmethod
    def is_module_pass(cls) -> bool:
        return cls.anchor_ops() == (MODULE,)

    @classmethod
    def summary(cls) -> str:
        """The first line of the class docstring (MLIR's pass summary)."""
        doc = cls.__dict__.get("__doc__") or ""
        if doc.startswith(cls.__name__ + "("):   # dataclass's generated signature
            return ""
        return doc.strip().split("\n", 1)[0].strip().rstrip(".")

    def run(self, module, ctx: "PassContext"):
        """Run on the whole module: by default ``run_on`` each op of the
        pass's anchor kind in it (the module itself for an op-agnostic pass)."""
        ops = self.anchor_ops()
        if ANY in ops:
            return self.run_on(module, ctx)
        if ops == (MODULE,):
            raise NotImplementedError(f"pass '{self.NAME}' implements neither run nor run_on")
        for op in list(module.body.ops):
            if op.name in ops and op.parent is not None:
                self.run_on(op, ctx)

    def run_on(self, op, ctx: "PassContext"):
        """Run on one op of the pass's anchor kind; a whole-module pass runs
        on a module."""
        if op.name == MODULE and self.is_module_pass():
            return self.run(op, ctx)
        raise NotImplementedError(f"pass '{self.NAME}' does not run on '{op.name}'")

    # -- options ---------------------------------------------------------------

    @classmethod
    def option_fields(cls):
        """[(field name, type, dataclasses.Field)] of the pass's options."""
        hints = typing.get_type_hints(cls)
        return [(f.name, hints[f.name], f) for f in dataclasses.fields(cls)]

    @classmethod
    def options_help(cls):
        """[(option name, type text, default, help)] for ``--list-passes``."""
        out = []
        for name, typ, f in cls.option_fields():
            if name == cls.EXTRA_OPTIONS:
                continue
            out.append((name.replace("_", "-"), type_text(typ), field_default(f), f.metadata.get("help", "")))
        return out

    @classmethod
    def from_options(cls, text: str, base_offset: int = 0):
        kwargs = {}
        fields = {n.replace("_", "-"): (n, t) for n, t, _ in cls.option_fields()}
        extra = {}
        for key, value, off in split_options(text):
            off += base_offset
            f = fields.get(key)
            if f is None:
                if cls.EXTRA_OPTIONS:
                    extra[key] = value
                    continue
                names = ", ".join(sorted(fields)) or "none"
                raise PassOptionError(f"pass '{cls.NAME}' has no option '{key}' (options: {names})", off)
            name, typ = f
            try:
                kwargs[name] = convert_option(value, typ)
            except ValueError as e:
                raise PassOptionError(f"option '{key}' of pass '{cls.NAME}': {e}", off) from None
        if extra:
            kwargs[cls.EXTRA_OPTIONS] = dict(kwargs.get(cls.EXTRA_OPTIONS, {}), **extra)
        try:
            p = cls(**kwargs)
            p.validate()
        except ValueError as e:
            raise PassOptionError(f"pass '{cls.NAME}': {e}", base_offset) from None
        return p

    def validate(self):
        """Check option values together; raise ValueError with a message."""

    def options_text(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v == field_default(f):
                continue
            if f.name == self.EXTRA_OPTIONS:
                parts.extend(f"{k}={x}" for k, x in v.items())
                continue
            parts.append(f"{f.name.replace('_', '-')}={format_option(v)}")
        return " ".join(parts)

    def pipeline_text(self) -> str:
        o = self.options_text()
        return f"{self.NAME}{{{o}}}" if o else self.NAME


ModulePass = Pass      # the name every pass module imports


def field_default(f):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def type_text(typ) -> str:
    """An option type as the user writes it: int, bool, str, list<int>, ..."""
    origin = typing.get_origin(typ)
    if origin in (list, tuple):
        return f"list<{type_text(typing.get_args(typ)[0])}>"
    if origin is dict:
        return "KEY=VALUE,..."
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if args and origin is not None:
        return type_text(args[0])
    return getattr(typ, "__name__", str(typ))


def split_options(text: str):
    """``a=1 b=x,y c`` -> [(key, value, offset)].  Values may be quoted or
    bracketed ({...}, [...]) to hold spaces."""
    out = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t,":
            i += 1
        if i >= n:
            break
        start = i
        while i < n and text[i] not in "= \t":
            i += 1
        key = text[start:i]
        value = "true"
        if i < n and text[i] == "=":
            i += 1
            vstart = i
            depth = 0
            quote = None
            while i < n:
                ch = text[i]
                if quote:
                    if ch == quote:
                        quote = None
                elif ch in "'\"":
                    quote = ch
                elif ch in "{[(":
                    depth += 1
                elif ch in "}])":
                    depth -= 1
                elif ch in " \t" and depth == 0:
                    break
                i += 1
            value = text[vstart:i]
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
        if not key:
            raise PassOptionError("expected an option name", start)
        out.append((key, value, start))
    return out


def convert_option(value: str, typ):
    origin = typing.get_origin(typ)
    if typ is bool:
        v = value.lower()
        if v in ("true", "1", "on", "yes"):
            return True
        if v in ("false", "0", "off", "no"):
            return False
        raise ValueError(f"expected true or false, got '{value}'")
    if typ is int:
        try:
            return int(value, 0)
        except ValueError:
            raise ValueError(f"expected an integer, got '{value}'") from None
    if typ is float:
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"expected a number, got '{value}'") from None
    if typ is str:
        return value
    if origin in (list, tuple):
        (elem,) = typing.get_args(typ)[:1]
        v = value.strip()
        if v.startswith("[") and v.endswith("]"):
            v = v[1:-1]
        return [convert_option(x.strip(), elem) for x in v.split(",") if x.strip()]
    if origin is dict:
        out = {}
        for item in value.split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise ValueError(f"expected key=value, got '{item}'")
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
        return out
    if typing.get_origin(typ) is typing.Union or str(typ).startswith("typing.Optional") or " | " in str(typ):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value in ("", "none"):
            return None
        return convert_option(value, args[0])
    raise ValueError(f"unsupported option type {typ}")


def format_option(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(format_option(x) for x in v)
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return str(v)


# -- pipelines ------------------------------------------------------------------

@dataclass
class PipelineElement:
    name: str
    options: str = ""
    offset: int = 0          # where the name starts in the pipeline text
    options_offset: int = 0
    nested: list | None = None  # for an anchor: the elements it runs


def parse_pipeline(text: str) -> list[PipelineElement]:
    """Parse the pipeline grammar in the module docstring."""
    pos = 0
    n = len(text)

    def ws():
        nonlocal pos
        while pos < n and text[pos] in " \t\n":
            pos += 1

    def elements(closing):
        nonlocal pos
        out = []
        while True:
            ws()
            if pos >= n or text[pos] == closing:
                if not out and closing is None and pos >= n:
                    return out
                if not out:
                    raise PassOptionError("expected a pass name", pos)
                return out
            start = pos
            while pos < n and (text[pos].isalnum() or text[pos] in "-_."):
                pos += 1
            name = text[start:pos]
            if not name:
                raise PassOptionError(f"unexpected '{text[pos]}' in pass pipeline", pos)
            ws()
            el = PipelineElement(name, offset=start)
            if pos < n and text[pos] == "{":
                depth, ostart = 1, pos + 1
                pos += 1
                while pos < n and depth:
                    if text[pos] == "{":
                        depth += 1
                    elif text[pos] == "}":
                        depth -= 1
                    pos += 1
                if depth:
                    raise PassOptionError("unbalanced '{' in pass options", ostart - 1)
                el.options = text[ostart:pos - 1]
                el.options_offset = ostart
            elif pos < n and text[pos] == "(":
                pos += 1
                el.nested = elements(")")
                ws()
                if pos >= n or text[pos] != ")":
                    raise PassOptionError("expected ')' to close the nested pipeline", pos)
                pos += 1
            out.append(el)
            ws()
            if pos < n and text[pos] == ",":
                pos += 1
                continue
            ws()
            if pos >= n or text[pos] == closing:
                return out
            raise PassOptionError(f"expected ',' between passes, got '{text[pos]}'", pos)

    els = elements(None)
    ws()
    if pos != n:
        raise PassOptionError(f"unexpected '{text[pos]}' in pass pipeline", pos)
    return els


def pipeline_anchors(registry_get) -> set[str]:
    """The ops a pipeline may nest on: builtin.module and every op a
    registered pass declares.  Imports every pass: only for errors."""
    from .registry import PASSES
    out = {MODULE}
    for name in PASSES:
        try:
            cls = registry_get(name)
        except RuntimeError:
            continue
        if cls is not None:
            out.update(x for x in cls.anchor_ops() if x != ANY)
    return out


def nesting_error(cls, anchor: str) -> str:
    ops = cls.anchor_ops()
    if ops == (MODULE,):
        return (f"pass '{cls.NAME}' runs on the whole module ('builtin.module') and cannot be "
                f"nested under '{anchor}'")
    kinds = " or ".join(f"'{x}'" for x in ops)
    fix = f"; write '{ops[0]}({cls.NAME})'" if len(ops) == 1 else ""
    return f"pass '{cls.NAME}' runs on {kinds} ops and cannot be nested under '{anchor}'{fix}"


def _check_anchor(el, registry_get):
    """Is `el.name` an op a pipeline can nest on?  Cheap when a pass nested
    in it declares it; otherwise ask every registered pass."""
    for sub in el.nested:
        if sub.nested is None:
            try:
                cls = registry_get(sub.name)
            except RuntimeError:
                cls = None
            if cls is not None and el.name in cls.anchor_ops():
                return
    anchors = pipeline_anchors(registry_get)
    if el.name not in anchors:
        raise PassOptionError(f"'{el.name}' is not an op a pipeline can nest on "
                              f"(one of {', '.join(sorted(anchors))})", el.offset)


def instantiate(elements, registry_get, anchor: str | None = None) -> list:
    """Pipeline elements -> [(anchor or None, pass)]: the anchor is the op
    name the pass is nested under (None: the module).  Raises
    PassOptionError at an unknown pass or anchor, a bad option, or a pass
    nested under an op it does not run on."""
    out = []
    for el in elements:
        if el.nested is not None:
            if el.name == MODULE:
                if anchor is not None:
                    raise PassOptionError(f"'builtin.module' cannot be nested under '{anchor}'", el.offset)
                out.extend(instantiate(el.nested, registry_get, None))
                continue
            _check_anchor(el, registry_get)
            if anchor is not None:
                raise PassOptionError(f"'{el.name}' cannot be nested under '{anchor}': a function anchor "
                                      "nests only directly under builtin.module", el.offset)
            out.extend(instantiate(el.nested, registry_get, el.name))
            continue
        cls = registry_get(el.name)
        if cls is None:
            raise PassOptionError(f"'{el.name}' does not refer to a registered pass", el.offset)
        if anchor is not None and not cls.runs_on(anchor):
            raise PassOptionError(nesting_error(cls, anchor), el.offset)
        out.append((anchor, cls.from_options(el.options, el.options_offset)))
    return out


# -- running ---------------------------------------------------------------------

class PassContext:
    """What passes share while a pipeline runs: statistics and options."""

    def __init__(self):
        self.stats: dict[str, dict[str, int]] = {}

    def stat(self, p, name: str, n: int = 1):
        d = self.stats.setdefault(p.NAME, {})
        d[name] = d.get(name, 0) + n


class PassFailure(Exception):
    """A pass raised; carries which pass and the original exception."""

    def __init__(self, index, pass_, exc):
        super().__init__(str(exc))
        self.index = index
        self.pass_ = pass_
        self.exc = exc


@dataclass
class Instrumentation:
    print_before: set = dataclasses.field(default_factory=set)
    print_after: set = dataclasses.field(default_factory=set)
    print_before_all: bool = False
    print_after_all: bool = False
    print_after_change: bool = False
    print_after_failure: bool = False
    print_generic: bool = False
    print_debuginfo: bool = False
    timing: bool = False
    verify_each: bool = True
    out: typing.Any = None   # a file for the dumps (stderr)


def pass_title(p) -> str:
    return f"{type(p).__name__} ({p.NAME})"


class PassManager:
    def __init__(self, passes, instr: Instrumentation | None = None):
        self.passes = passes  # [(anchor, pass)]
        self.instr = instr or Instrumentation()
        self.timings: list[tuple[str, float]] = []
        self.ctx = PassContext()

    def pipeline_text(self, start=0) -> str:
        return ",".join(p.pipeline_text() if a is None else f"{a}({p.pipeline_text()})"
                        for a, p in self.passes[start:])

    def _dump(self, module, header):
        from .printer import print_module
        out = self.instr.out
        out.write(f"// -----// IR Dump {header} //----- //\n")
        out.write(print_module(module, generic=self.instr.print_generic, debuginfo=self.instr.print_debuginfo))
        out.write("\n")

    def run(self, module):
        from .printer import print_module
        from .verifier import verify
        instr = self.instr
        for i, (anchor, p) in enumerate(self.passes):
            title = pass_title(p)
            if instr.print_before_all or p.NAME in instr.print_before:
                self._dump(module, f"Before {title}")
            before = None
            if instr.print_after_change:
                before = print_module(module)
            t0 = time.perf_counter()
            try:
                if anchor is None:
                    p.run(module, self.ctx)
                else:
                    run_anchored(p, anchor, module, self.ctx)
            except Exception as e:
                self.timings.append((title, time.perf_counter() - t0))
                if instr.print_after_failure:
                    self._dump(module, f"After {title} Failed")
                raise PassFailure(i, p, e) from e
            self.timings.append((title, time.perf_counter() - t0))
            if instr.verify_each:
                t1 = time.perf_counter()
                try:
                    verify(module)
                except DiagnosticError as e:
                    if instr.print_after_failure:
                        self._dump(module, f"After {title} Failed")
                    raise PassFailure(i, p, InvalidIRError(p, e)) from e
                self.timings.append(("(verifier)", time.perf_counter() - t1))
            if instr.print_after_all or p.NAME in instr.print_after:
                if not instr.print_after_change or print_module(module) != before:
                    self._dump(module, f"After {title}")
            elif instr.print_after_change and print_module(module) != before:
                self._dump(module, f"After {title}")
        return module


class InvalidIRError(Exception):
    """A pass left IR the verifier rejects: a bug in the pass."""

    def __init__(self, p, diag_error):
        super().__init__(f"pass '{p.NAME}' produced invalid IR: {diag_error}")
        self.diag_error = diag_error


def run_anchored(p, anchor, module, ctx):
    """Run `p` on each op named `anchor` at the top of the module (the
    pass's ``run_on``)."""
    if not p.runs_on(anchor):
        raise DiagnosticError(FileLoc("<pass-pipeline>", 1, 1), nesting_error(type(p), anchor))
    for op in list(module.body.ops):
        if op.name == anchor and op.parent is not None:
            p.run_on(op, ctx)
