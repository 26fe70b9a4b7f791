"""Parse-time IR construction: the callbacks Lark calls as it reduces rules.

There is no parse tree.  Lark (LALR, contextual lexer) calls one method per
rule as the rule is reduced, bottom-up and left to right, and these methods
build the IR directly:

* ``operation`` binds result names and appends the op to the current block;
* ``region_open`` runs when a ``{`` is read, opens a scope, and gives the
  entry block the arguments the op header announced (``open_op``);
* ``region`` closes the scope when ``}`` is read.

Dialects add methods for their own rules (``dialects/*/syntax.py``); each
custom op with regions calls ``open_op`` from a header rule and
``close_op`` when the op itself is reduced.  The rules generated from the
ops' assembly formats get their callbacks from ``format_callback`` (end of
this file).
"""

from __future__ import annotations

import re

from lark import Token

from ..ir.attributes import UNIT, DenseAttr, DialectAttr, FrozenDict, SymbolRef, dense_from_literal
from ..ir.core import Block, OpResult, Operation, Region, Value, unregistered_op_class
from ..ir.diagnostics import DiagnosticError
from ..ir.location import UNKNOWN, FileLoc, FusedLoc, NameLoc
from ..ir.registry import get_op_class
from ..ir.traits import ISOLATED_FROM_ABOVE
from ..ir.types import (FunctionType, Type, TupleType, TypeSyntaxError, incomplete,
                        parse_type)


_VALUE_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+(?:#[0-9]+)?)")
_RESULT_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)(?::([0-9]+))?")


def sub_token(tok, offset: int, text: str, type_="VALUE"):
    """A token for part of `tok` (one name in an operand list), positioned
    where that part starts, for precise error carets."""
    nl = tok.count("\n", 0, offset)
    if nl == 0:
        return Token(type_, text, line=tok.line, column=tok.column + offset)
    return Token(type_, text, line=tok.line + nl, column=offset - tok.rfind("\n", 0, offset))


class _RegionCtx:
    __slots__ = ("region", "block", "names", "isolated", "owner")

    def __init__(self, region, block, isolated, owner):
        self.region = region
        self.block = block
        self.names = {}
        self.isolated = isolated
        self.owner = owner


class OpenOp:
    """What an op header announces before its regions are read."""

    __slots__ = ("isolated", "args", "terminators", "regions_opened", "info")

    def __init__(self, isolated=False, args=(), terminators=None, info=None):
        self.isolated = isolated
        self.args = list(args)            # [(name token, Type)] for the entry block
        self.terminators = terminators or {}  # keyword -> op class, for `return` / `yield`
        self.regions_opened = 0
        self.info = info


def unquote(tok: str) -> str:
    s = tok[1:-1]
    if "\\" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n:
            d = s[i + 1]
            simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}.get(d)
            if simple is not None:
                out.append(simple)
                i += 2
                continue
            if i + 2 < n and all(ch in "0123456789abcdefABCDEF" for ch in s[i + 1:i + 3]):
                out.append(chr(int(s[i + 1:i + 3], 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


class CoreBuilder:
    """Callbacks for parser/core.lark, and the scope machinery dialects use."""

    def reset(self, filename: str, line_offset: int = 0, resources=None, allow_unregistered=False):
        from ..dialects.builtin.ops import ModuleOp
        self.filename = filename
        self.line_offset = line_offset
        self.resources = resources or {}
        self.allow_unregistered = allow_unregistered
        self.owners: list[OpenOp] = []
        top = Region([Block()])
        self.top_region = top
        self.ctx = [_RegionCtx(top, top.blocks[0], True, None)]
        self._module_cls = ModuleOp

    # -- helpers for dialect syntax -----------------------------------------

    def loc(self, tok) -> FileLoc:
        return FileLoc(self.filename, tok.line + self.line_offset, tok.column)

    def err(self, tok, message, notes=()):
        loc = self.loc(tok) if isinstance(tok, Token) and tok.line is not None else UNKNOWN
        return DiagnosticError(loc, message, notes)

    def use(self, tok) -> Value:
        """Resolve a ``%name`` token to the value it names in scope."""
        name = tok[1:]
        for ctx in reversed(self.ctx):
            v = ctx.names.get(name)
            if v is not None:
                return v
            if ctx.isolated:
                break
        else:
            raise self.err(tok, f"use of undeclared SSA value name '{tok}'")
        for ctx in self.ctx:
            if name in ctx.names:
                raise self.err(tok, f"'{tok}' is defined outside the isolated-from-above op that uses it")
        raise self.err(tok, f"use of undeclared SSA value name '{tok}'")

    def uses(self, toks):
        return [self.use(t) for t in toks]

    def uses_in(self, tok) -> list:
        """Resolve every name in a VALUE_LIST token ``(%a, %b)``."""
        out = []
        ctxs = self.ctx
        for m in _VALUE_NAME.finditer(tok):
            name = m.group(1)
            for ctx in reversed(ctxs):
                v = ctx.names.get(name)
                if v is not None:
                    out.append(v)
                    break
                if ctx.isolated:
                    v = None
                    break
            if v is None:
                self.use(sub_token(tok, m.start(), m.group(0)))
        return out

    def _defined_outside(self, name) -> bool:
        ctxs = self.ctx
        for i in range(len(ctxs) - 1, 0, -1):
            if ctxs[i].isolated:
                return False
            if name in ctxs[i - 1].names:
                return True
        return False

    def define(self, tok, value: Value):
        name = tok[1:]
        if "#" in name:
            raise self.err(tok, f"'{tok}': a result number (#N) is only allowed in a use")
        for ctx in reversed(self.ctx):
            if name in ctx.names:
                raise self.err(tok, f"redefinition of SSA value '{tok}'")
            if ctx.isolated:
                break
        self.ctx[-1].names[name] = value
        if not name[0].isdigit():
            value.name = name

    def open_op(self, isolated=False, args=(), terminators=None, info=None) -> OpenOp:
        """Announce an op with regions; its first region's entry block gets
        `args` (name token, type) as block arguments."""
        o = OpenOp(isolated, args, terminators, info)
        self.owners.append(o)
        return o

    def close_op(self) -> OpenOp:
        return self.owners.pop()

    def terminator_for(self, keyword: str, tok):
        for o in reversed(self.owners):
            cls = o.terminators.get(keyword)
            if cls is not None:
                return cls
            if o.isolated:
                break
        raise self.err(tok, f"'{keyword}' is not allowed here")

    def make_op(self, cls, operands, result_types, attrs, regions, tok):
        try:
            return cls(operands, result_types, attrs, regions, self.loc(tok))
        except DiagnosticError:
            raise
        except (ValueError, TypeError) as e:
            raise self.err(tok, str(e)) from None

    def type_of_token(self, tok) -> Type:
        try:
            return parse_type(tok)
        except TypeSyntaxError as e:
            raise DiagnosticError(FileLoc(self.filename, tok.line + self.line_offset, tok.column + e.offset),
                                  str(e)) from None

    # -- operations --------------------------------------------------------

    def operation(self, c):
        op = None
        names = None
        loc = None
        for x in c:
            if isinstance(x, Operation):
                op = x
            elif isinstance(x, Token):
                names = x
            elif x is not None:
                loc = x
        if names is not None:
            self.bind_results(names, op)
        if loc is not None:
            op.loc = loc
        self.ctx[-1].block.append(op)
        return None

    def bind_results(self, tok, op):
        """``%a, %b =`` or ``%r:2 =``: name the op's results."""
        results = op.results
        if len(results) == 1 and "," not in tok and ":" not in tok:
            # the common case, `%x =`, without a regex or a token per name
            name = tok[1:-1].rstrip()
            names = self.ctx[-1].names
            if name not in names and not self._defined_outside(name):
                names[name] = results[0]
                if not name[0].isdigit():
                    results[0].name = name
                return
        items = [(m.group(1), None if not m.group(2) else int(m.group(2)) if len(m.group(2)) < 19 else 1 << 63,
                  m.start()) for m in _RESULT_NAME.finditer(tok)]
        total = sum(1 if n is None else n for _, n, _ in items)
        if total != len(results):
            raise self.err(tok, f"operation defines {len(results)} result(s) but {total} name(s) were given")
        i = 0
        for name, n, off in items:
            if n is None:
                r = results[i]
                self.define(sub_token(tok, off, "%" + name), r)
                i += 1
                continue
            if n < 1:
                raise self.err(sub_token(tok, off, "%" + name), "result count must be positive")
            # `%r:2 = ...` defines %r (the first) and %r#0, %r#1
            self.define(sub_token(tok, off, "%" + name), results[i])
            names_here = self.ctx[-1].names
            for k in range(n):
                names_here[f"{name}#{k}"] = results[i]
                results[i].name = None if name[0].isdigit() else name
                i += 1

    def generic_name(self, c):
        tok = c[0]
        name = unquote(tok)
        cls = get_op_class(name)
        if cls is None:
            if not self.allow_unregistered:
                raise self.err(tok, f"unregistered operation '{name}' (use --allow-unregistered-dialect to keep it)")
            cls = unregistered_op_class(name)
        self.open_op(ISOLATED_FROM_ABOVE in cls.traits)
        return (tok, cls)

    def generic_op(self, c):
        self.close_op()
        tok, cls = c[0]
        regions, attrs, fn = [], {}, None
        vals_tok = c[1]
        for x in c[2:]:
            if isinstance(x, Region):
                regions.append(x)
            elif isinstance(x, FunctionType):
                fn = x
            elif isinstance(x, dict):
                attrs = x
        operands = self.uses_in(vals_tok)
        if len(fn.inputs) != len(operands):
            raise self.err(tok, f"the type lists {len(fn.inputs)} operand(s) but {len(operands)} were given")
        for i, (t, v) in enumerate(zip(fn.inputs, operands)):
            if v.type is not t:
                m = list(_VALUE_NAME.finditer(vals_tok))[i]
                raise self.err(sub_token(vals_tok, m.start(), m.group(0)),
                               f"use of value '{m.group(0)}' expects different type than prior uses: "
                               f"'{t}' vs '{v.type}'")
        return self.make_op(cls, operands, fn.results, attrs, regions, tok)

    # -- regions -------------------------------------------------------------

    def region_open(self, c):
        owner = self.owners[-1] if self.owners else None
        region = Region()
        block = region.add_block(Block())
        isolated = bool(owner and owner.isolated)
        ctx = _RegionCtx(region, block, isolated, owner)
        self.ctx.append(ctx)
        if owner is not None:
            if owner.regions_opened == 0:
                for tok, t in owner.args:
                    self.define(tok, block.add_arg(t))
            owner.regions_opened += 1
        return None

    def region(self, c):
        ctx = self.ctx.pop()
        return ctx.region

    def labeled_block(self, c):
        return None

    def block_label(self, c):
        ctx = self.ctx[-1]
        tok = c[0]
        b = ctx.block
        entry_unused = (len(ctx.region.blocks) == 1 and b.first is None and not b.args and b.label is None)
        if not entry_unused:
            b = ctx.region.add_block(Block())
            ctx.block = b
        b.label = str(tok)
        for name_tok, t in c[1:]:
            self.define(name_tok, b.add_arg(t))
        return None

    def block_arg(self, c):
        return (c[0], c[1])

    # -- types -----------------------------------------------------------------

    def type(self, c):
        x = c[0]
        if isinstance(x, Token):
            return self.type_of_token(x)
        return x

    def incomplete_type(self, c):
        return incomplete

    def tuple_type(self, c):
        return TupleType(c)

    def fn_results(self, c):
        return [self.type_of_token(x) if isinstance(x, Token) else x for x in c]

    def function_type(self, c):
        return FunctionType(c[:-1], c[-1])

    # -- attributes ------------------------------------------------------------

    def attr_dict(self, c):
        d = {}
        for k, v, tok in c:
            if k in d:
                raise self.err(tok, f"duplicate attribute '{k}'")
            d[k] = v
        return d

    def attr_entry(self, c):
        tok = c[0]
        key = unquote(tok) if tok.type == "STRING" else str(tok)
        if len(c) == 1:
            return (key, UNIT, tok)
        v = c[1]
        if type(v) is dict:
            v = FrozenDict(v)
        return (key, v, tok)

    def attr_int(self, c):
        return _int_literal(self, c[0])

    def attr_float(self, c):
        return _float_literal(self, c[0])

    def attr_special_float(self, c):
        return float(c[0])

    def attr_string(self, c):
        return unquote(c[0])

    def attr_true(self, c):
        return True

    def attr_false(self, c):
        return False

    def attr_unit(self, c):
        return UNIT

    def attr_symbol(self, c):
        s = c[0][1:]
        return SymbolRef(unquote(s) if s.startswith('"') else s)

    def attr_array(self, c):
        return tuple(FrozenDict(x) if type(x) is dict else x for x in c)

    def attr_type(self, c):
        return c[0]

    def dense_attr(self, c):
        tok, t = c[0], c[-1]
        if tok.type == "DENSE_RESOURCE":
            key_tok = c[1]
            key = unquote(key_tok) if key_tok.type == "STRING" else str(key_tok)
            blob = self.resources.get(key)
            if blob is None:
                raise self.err(key_tok, f"no resource named '{key}' in the file's resource section")
            return self.resource_attr(key_tok, key, blob, t)
        lit = c[1] if len(c) == 3 else ()
        try:
            return dense_from_literal(lit, t)
        except ValueError as e:
            raise self.err(tok, str(e)) from None

    def resource_attr(self, tok, key, blob, t):
        import numpy as np
        from ..ir.types import ShapedType
        if not isinstance(t, ShapedType) or not t.is_static:
            raise self.err(tok, f"dense_resource needs a static tensor type, got {t}")
        try:
            dtype = t.dtype
        except TypeError as e:
            raise self.err(tok, str(e)) from None
        n = t.num_elements()
        if len(blob) != n * dtype.itemsize:
            raise self.err(tok, f"resource '{key}' holds {len(blob)} bytes but {t} needs {n * dtype.itemsize}")
        arr = np.frombuffer(blob, dtype=dtype.newbyteorder("<")).reshape(t.shape)
        return DenseAttr(arr, t, key=key)

    def dialect_attr(self, c):
        name = c[0][1:]
        return DialectAttr(name, tuple(FrozenDict(x) if type(x) is dict else x for x in c[1:]))

    # -- locations -------------------------------------------------------------

    def location(self, c):
        return c[0]

    def loc_unknown(self, c):
        return UNKNOWN

    def loc_file(self, c):
        line, col = _int_literal(self, c[1]), _int_literal(self, c[2])
        for tok, v in ((c[1], line), (c[2], col)):
            if not 0 <= v < 1 << 31:
                raise self.err(tok, f"a location's line and column are integers in [0, 2^31), got {tok}")
        return FileLoc(unquote(c[0]), line, col)

    def loc_name(self, c):
        return NameLoc(unquote(c[0]), c[1] if len(c) > 1 else UNKNOWN)

    def loc_fused(self, c):
        return FusedLoc(c)

    # -- the whole file ------------------------------------------------------

    def start(self, c):
        block = self.top_region.blocks[0]
        ops = list(block.ops)
        if len(ops) == 1 and isinstance(ops[0], self._module_cls):
            module = ops[0]
            module.detach()
            return module
        module = self._module_cls.create_empty()
        for op in ops:
            module.body.append(op)
        return module


def _terminator(self, c, keyword):
    tok = c[0]
    cls = self.terminator_for(keyword, tok)
    return self.make_op(cls, self.uses(c[1:]), (), None, (), tok)


CoreBuilder.return_op = lambda self, c: _terminator(self, c, "return")
CoreBuilder.yield_op = lambda self, c: _terminator(self, c, "yield")


# -- declarative assembly formats (ir/assembly_format.py) ------------------------

def _int_literal(self, tok):
    """The int an INT token denotes (the lexer has bounded its length)."""
    s = str(tok)
    return int(s, 16) if "x" in s else int(s)


def _float_literal(self, tok):
    """The float a FLOAT token denotes; a finite literal too large for f64 is an error."""
    v = float(tok)
    if v in (float("inf"), float("-inf")):
        raise self.err(tok, f"float literal {str(tok)[:40]} overflows f64 (write inf for infinity)")
    return v


def _attr_from_token(self, tok, form):
    """The attribute value a literal token of `form` denotes."""
    s = str(tok)
    if form == "keyword":
        return s
    if form == "string":
        return unquote(s)
    if form == "symbol":
        s = s[1:]
        return SymbolRef(unquote(s) if s.startswith('"') else s)
    t = tok.type
    if t == "INT":
        v = _int_literal(self, tok)
        if form == "float":
            try:
                return float(v)
            except OverflowError:
                raise self.err(tok, f"integer literal {s[:40]} overflows f64") from None
        return v
    if t == "FMT_BOOL":
        return s == "true"
    if t == "FLOAT":
        return _float_literal(self, tok)
    return float(s)


def format_callback(fmt, classes):
    """The parse callback for one generated rule: the ops `classes` share
    the format shape `fmt`.  It reads the children Lark hands it in the
    order of ``fmt.steps``, resolves operands (an error at the operand's
    token), checks written operand types, builds the op, and infers the
    result types the format does not write (``infer_types``)."""
    from ..ir.assembly_format import Group

    entries = {c.name: (c, getattr(c, "coerce_parsed_attrs", None)) for c in classes}
    single = entries[classes[0].name] if len(classes) == 1 else None
    steps = fmt.steps
    groups = [sub for _, sub in fmt.groups]
    n_slots = len(fmt.operand_names)
    var = fmt.variadic_slot
    n_results = len(fmt.result_names)
    infer = fmt.infer
    consumed = fmt.consumed

    def take_attr_dict(self, c, d, attrs):
        for key, v in d.items():
            if key in consumed:
                raise self.err(c[0], f"attribute '{key}' is written in the op's syntax, "
                                     "not in its attribute dictionary")
            attrs[key] = v

    def run(self, steps, c, i, vals, toks, rtypes, attrs, checks):
        n = len(c)
        for kind, arg in steps:
            if kind == "operand":
                t = c[i]
                vals[arg] = self.use(t)
                toks[arg] = t
                i += 1
            elif kind == "type":
                of, k = arg
                if of == "result":
                    rtypes[k] = c[i]
                else:
                    checks.append((k, c[i]))
                i += 1
            elif kind == "attr-dict":
                if i < n and type(c[i]) is dict:
                    take_attr_dict(self, c, c[i], attrs)
                    i += 1
            elif kind == "attr":
                name, form = arg
                attrs[name] = _attr_from_token(self, c[i], form)
                i += 1
            elif kind == "oplist":
                vals[arg] = self.uses_in(c[i])
                i += 1
            elif kind == "opvar":
                vs = []
                while i < n and isinstance(c[i], Token) and c[i].type == "VALUE":
                    vs.append(self.use(c[i]))
                    i += 1
                vals[arg] = vs
            else:  # group
                if i < n and type(c[i]) is Group:
                    run(self, groups[arg], c[i].children, 0, vals, toks, rtypes, attrs, checks)
                    i += 1
        return i

    def build(self, tok, cls, hook, operands, rtypes, attrs):
        if hook is not None:
            try:
                attrs = hook(attrs, rtypes)
            except (ValueError, TypeError) as e:
                raise self.err(tok, str(e)) from None
        if not infer:
            return self.make_op(cls, operands, rtypes, attrs or None, (), tok)
        op = self.make_op(cls, operands, (), attrs or None, (), tok)
        try:
            types = op.infer_types()
        except DiagnosticError:
            raise
        except (ValueError, TypeError) as e:
            raise self.err(tok, str(e)) from None
        op.results = [OpResult(t, op, i) for i, t in enumerate(types)]
        return op

    def general(self, c):
        tok = c[0]
        cls, hook = single or entries[tok]
        vals = [None] * n_slots
        toks = [None] * n_slots
        rtypes = [None] * n_results
        attrs = {}
        checks = []
        run(self, steps, c, 1, vals, toks, rtypes, attrs, checks)
        for k, t in checks:
            v = vals[k]
            if v.type is not t:
                raise self.err(toks[k], f"'{toks[k]}' has type {v.type}, not {t}")
        if var >= 0:
            operands = vals[:var]
            operands.extend(vals[var] or ())
        else:
            operands = vals
        return build(self, tok, cls, hook, operands, rtypes, attrs)

    kinds = {k for k, _ in steps}
    if kinds & {"group", "opvar"}:
        return general

    # The common case: every child is at a fixed place, but for the
    # optional attribute dictionary.  Work out both layouts once.
    def layout(with_dict):
        i = 1
        ops, lst, res, chk, att, ad = [None] * n_slots, None, [None] * n_results, [], [], None
        for kind, arg in steps:
            if kind == "attr-dict":
                if with_dict:
                    ad = i
                    i += 1
                continue
            if kind == "operand":
                ops[arg] = i
            elif kind == "oplist":
                lst = i
            elif kind == "type":
                if arg[0] == "result":
                    res[arg[1]] = i
                else:
                    chk.append((i, arg[1]))
            elif kind == "attr":
                att.append((i, arg[0], arg[1]))
            i += 1
        singles = tuple(x for x in ops if x is not None)
        chk = tuple((ti, ops[slot]) for ti, slot in chk)
        return i, (singles, lst, tuple(res) if not infer else (), chk, tuple(att), ad)

    n_full, full = layout(True)
    n_short, short = layout(False)

    def fixed(self, c):
        tok = c[0]
        cls, hook = single or entries[tok]
        singles, lst, res, chk, att, ad = full if len(c) == n_full else short
        use = self.use
        operands = [use(c[i]) for i in singles]
        if lst is not None:
            operands.extend(self.uses_in(c[lst]))
        for ti, oi in chk:
            t = c[ti]
            o = c[oi]
            v = operands[singles.index(oi)]
            if v.type is not t:
                raise self.err(o, f"'{o}' has type {v.type}, not {t}")
        attrs = {}
        for i, name, form in att:
            attrs[name] = _attr_from_token(self, c[i], form)
        if ad is not None:
            if attrs:
                take_attr_dict(self, c, c[ad], attrs)
            else:
                attrs = dict(c[ad])
        rtypes = [c[i] for i in res]
        if hook is None and not infer:
            return self.make_op(cls, operands, rtypes, attrs or None, (), tok)
        return build(self, tok, cls, hook, operands, rtypes, attrs)

    return fixed


def group_callback(self, c):
    from ..ir.assembly_format import Group
    return Group(c)
