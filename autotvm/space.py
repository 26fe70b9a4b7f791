"""Knobs and the config space of a template.

A te schedule with knobs in place of values is a template.  A knob is an
attribute of the tune dialect, written where the schedule op takes a value;
each has one of AutoTVM's kinds, which logs record (docs/autotvm.md, Knobs)::

    #tune.knob<"NAME", [C0, C1, ...]>           ot  a choice among the candidates; untuned, C0
    #tune.knob<"NAME", [C0, C1, ...], D>        ot  ... and D untuned (one of the Ci)
    #tune.split<"NAME", EXTENT, POLICY>         sp  te.split's factor: POLICY "factors" (the
    #tune.split<"NAME", EXTENT, POLICY, D>          divisors of EXTENT), "power2", "verbose"
    #tune.split<..., {outputs = N, part = K}>       (both), or a list of inner factors
    #tune.reorder<"NAME", "all" | [[P], ...]>   re  te.reorder's perm; untuned, the identity
    #tune.knob<"NAME", [[P0], [P1], ...]>       re  te.reorder's perm, as a plain choice
    #tune.knob<"NAME", ["none", "unroll"]>      an  on te.annotate's kind

A split knob's value is AutoTVM's sizes ``(-1, f1, ..., f{N-1})`` (-1 the
outer extent, inferred); the te.split it stands in (part K, 1 when N = 2)
gets the factor ``f_K * ... * f_{N-1}``: part 1 splits an axis of EXTENT
iterations, part K > 1 the inner axis of part K - 1.  A reorder knob's
value is a permutation (the axes ``%a[perm[0]]`` outermost), an annotate
knob's a one-element tuple ``("unroll",)``: so a log reads
``["tile_y", "sp", [-1, 32]]``, ``["order", "re", [2, 0, 1]]``,
``["ann_x", "an", ["unroll"]]``, as AutoTVM wrote them.

Plain candidates are all integers or all strings, distinct, at least one.
A name used twice is one knob (a tile size shared by two splits): each use
must give the same kind, candidates and default.  Where the op needs a
positive integer (split and tile factors, nparts, storage_align's factor),
every candidate must be one.  Every broken rule is a located error, found
when the space is read, before anything is scheduled.

The config space of a template is its knobs in order of first use.  Its
length is the product of the knobs' lengths; a config is an index in
[0, len), the first knob varying fastest (AutoTVM's ConfigSpace order), and
its entity is the candidate each knob takes.  ``instantiate`` writes an
entity's plain values in place of the knobs (the factor, the perm, the
kind): what is left is a plain schedule.

A Python template's knobs (``cfg.define_split`` ..., autotvm/config.py) are
knobs of this space too, with ``func`` None and the same kinds and
candidates.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

from ..ir.attributes import DialectAttr, FrozenDict

KINDS = ("tune.knob", "tune.split", "tune.reorder")
# schedule-op attributes that must be positive integers
POSITIVE = {"factor", "nparts", "x_factor", "y_factor"}
SPLIT_POLICIES = ("factors", "power2", "verbose")
REORDER_POLICIES = ("all", "identity")


@dataclass
class Knob:
    name: str
    candidates: tuple
    default: object
    uses: list = field(default_factory=list)    # (op, attribute name, split part) where it stands
    kind: str = "ot"   # AutoTVM's code in logs: ot (a choice), sp (split), re (reorder), an (annotate)
    info: str = ""     # the knob as AutoTVM printed it: "Split(policy=factors, ...)"

    def __len__(self):
        return len(self.candidates)

    def describe(self):
        if not self.info:
            return f"{self.name}: {list(self.candidates)} len={len(self)} default={self.default}"
        if not self.uses:   # a Python template's knob: as AutoTVM printed it
            return f"{self.name}: {self.info} len={len(self)}"
        return f"{self.name}: {self.info} len={len(self)} default={json.dumps(_freeze(self.default))}"

    def plain(self, value, part=1):
        """What a use of the knob (a split's `part`) holds when it takes
        `value`: the factor, the perm, the loop kind, or the value itself."""
        if self.kind == "sp":
            return math.prod(value[part:])
        if self.kind == "an":
            return value[0]
        return value


def _freeze(v):
    return [_freeze(x) for x in v] if isinstance(v, tuple) else v


@dataclass
class ConfigEntity:
    """One point of a space: its index and the value of each knob."""
    index: int
    values: dict

    def __getitem__(self, name):
        return self.values[name]


class ConfigSpace:
    def __init__(self, func, knobs):
        self.func = func
        self.knobs = knobs

    def __len__(self):
        n = 1
        for k in self.knobs:
            n *= len(k)
        return n

    def get(self, index: int) -> ConfigEntity:
        """The config at `index` (mixed radix, the first knob fastest)."""
        if not 0 <= index < len(self):
            raise IndexError(f"config {index} is outside the space [0, {len(self)})")
        values, rest = {}, index
        for k in self.knobs:
            rest, i = divmod(rest, len(k))
            values[k.name] = k.candidates[i]
        return ConfigEntity(index, values)

    def index_of(self, values: dict) -> int:
        index, scale = 0, 1
        for k in self.knobs:
            index += k.candidates.index(values[k.name]) * scale
            scale *= len(k)
        return index

    def default(self) -> ConfigEntity:
        values = {k.name: k.default for k in self.knobs}
        return ConfigEntity(self.index_of(values), values)

    def kinds(self) -> dict:
        return {k.name: k.kind for k in self.knobs}

    @property
    def space_map(self) -> dict:
        """Knob name -> knob, in definition order (classic AutoTVM's name)."""
        return {k.name: k for k in self.knobs}

    def describe(self) -> str:
        """The space as AutoTVM printed it: each knob, its length, the total
        (a Python template's space, which has no te.func, without the
        ``@name: `` prefix)."""
        head = f"@{self.func.attributes.get('sym_name')}: " if self.func is not None else ""
        lines = [f"{head}ConfigSpace (len={len(self)}, space_map="]
        lines += [f"  {i:2d} {k.describe()}" for i, k in enumerate(self.knobs)]
        lines.append(")")
        return "\n".join(lines)

    __str__ = __repr__ = describe


def _knob_attrs(op):
    for key, v in op.attributes.items():
        if isinstance(v, DialectAttr) and v.name.startswith("tune."):
            yield key, v


class _Parsed:
    """One use of a knob: the knob it declares, and its split part."""
    __slots__ = ("knob", "part", "extent")

    def __init__(self, knob, part=1, extent=None):
        self.knob, self.part, self.extent = knob, part, extent


def _parse(op, key, attr) -> _Parsed:
    """The knob one attribute declares, or a located error."""
    if attr.name not in KINDS:
        raise op.error(f"unknown knob kind '#{attr.name}' (knobs are {', '.join('#' + k for k in KINDS)})")
    p = attr.params
    name = p[0] if p and type(p[0]) is str else None
    if name == "":
        raise op.error(f"'{key}': a knob needs a name")
    if attr.name == "tune.split":
        return _parse_split(op, key, p, name)
    if attr.name == "tune.reorder":
        return _parse_reorder(op, key, p, name)
    return _parse_knob(op, key, p, name)


def _op_kind(op):
    """(the schedule-op module, the op's class): where a knob stands."""
    from ..dialects.te import schedule_ops as S
    return S, type(op)


def _parse_knob(op, key, p, name):
    S, cls = _op_kind(op)
    if name is None or len(p) not in (2, 3) or not isinstance(p[1], tuple):
        raise op.error(f"'{key}': a knob is #tune.knob<\"NAME\", [CANDIDATES]> or "
                       f"#tune.knob<\"NAME\", [CANDIDATES], DEFAULT>")
    cands = p[1]
    if not cands:
        raise op.error(f"knob '{name}' has no candidates")
    default = p[2] if len(p) == 3 else cands[0]
    perm = cls is S.ReorderOp and key == "perm"
    kinds = {type(c) for c in cands}
    if perm:
        if kinds != {tuple}:
            raise op.error(f"knob '{name}': te.reorder's 'perm' takes permutations, lists of "
                           f"integers, got {_show(cands)}")
        _check_perms(op, name, cands)
    elif kinds == {tuple}:
        raise op.error(f"knob '{name}': lists of integers are candidates of te.reorder's 'perm' only")
    elif kinds not in ({int}, {str}):
        raise op.error(f"knob '{name}': candidates must be all integers or all strings, got {_show(cands)}")
    if len(set(cands)) != len(cands):
        raise op.error(f"knob '{name}' lists a candidate twice: {_show(cands)}")
    if key in POSITIVE and any(type(c) is not int or c < 1 for c in cands):
        raise op.error(f"knob '{name}': '{key}' takes positive integers, got {_show(cands)}")
    if default not in cands or type(default) is not type(cands[0]):
        raise op.error(f"knob '{name}': the default {_show(default)} is not one of its candidates "
                       f"{_show(cands)}")
    if perm:
        return _Parsed(Knob(name, cands, default, kind="re", info=f"Reorder(policy=candidate, {_show(cands)})"))
    if cls is S.AnnotateOp and key == "kind":
        for c in cands:
            if msg := S.annotate_kind_error(c):
                raise op.error(f"knob '{name}': te.annotate's 'kind' {msg}")
        return _Parsed(Knob(name, tuple((c,) for c in cands), (default,), kind="an",
                            info=f"Annotate(kinds={_show(cands)})"))
    return _Parsed(Knob(name, cands, default))


def _show(v):
    """A value as the text writes it: lists in brackets, strings quoted."""
    try:
        return json.dumps(_freeze(v))
    except (TypeError, ValueError):
        return repr(v)


def _check_perms(op, name, perms):
    from ..dialects.te.schedule_ops import perm_error
    n = len(op.operands)
    for c in perms:
        if msg := perm_error(c, n):
            raise op.error(f"knob '{name}': a candidate of 'perm' {msg}")


def _parse_split(op, key, p, name):
    S, cls = _op_kind(op)
    usage = (f"'{key}': a split knob is #tune.split<\"NAME\", EXTENT, POLICY> (POLICY "
             f"{', '.join(repr(x) for x in SPLIT_POLICIES)} or a list of factors), with an optional "
             f"DEFAULT and {{outputs = N, part = K}} after")
    if name is None or len(p) < 3:
        raise op.error(usage)
    rest = list(p[3:])
    opts = rest.pop() if rest and isinstance(rest[-1], FrozenDict) else {}
    if len(rest) > 1:
        raise op.error(usage)
    if not (cls is S.SplitOp and key == "factor"):
        raise op.error(f"knob '{name}': #tune.split gives a split factor: it stands in te.split's 'factor', "
                       f"not in {op.name}'s '{key}'")
    extent, policy = p[1], p[2]
    if type(extent) is not int or extent < 1:
        raise op.error(f"knob '{name}': the extent must be a positive integer, got {_show(extent)}")
    unknown = set(opts) - {"outputs", "part"}
    if unknown:
        raise op.error(f"knob '{name}': unknown option(s) {', '.join(sorted(unknown))} (outputs, part)")
    n = opts.get("outputs", 2)
    if type(n) is not int or n < 2:
        raise op.error(f"knob '{name}': outputs must be an integer of at least 2, got {_show(n)}")
    part = opts.get("part", 1)
    if type(part) is not int or not 1 <= part < n:
        raise op.error(f"knob '{name}': part must be in [1, {n - 1}] (which of its {n - 1} te.split(s) "
                       f"this is, outer first), got {_show(part)}")
    if isinstance(policy, tuple):
        cands = []
        for c in policy:
            inner = (c,) if n == 2 else c
            if not (isinstance(inner, tuple) and len(inner) == n - 1
                    and all(type(x) is int and x >= 1 for x in inner)):
                what = "a positive integer" if n == 2 else f"a list of {n - 1} positive integers"
                raise op.error(f"knob '{name}': each candidate is {what} (the inner factors), "
                               f"got {_show(c)}")
            cands.append(inner)
        if not cands:
            raise op.error(f"knob '{name}' has no candidates")
        if len(set(cands)) != len(cands):
            raise op.error(f"knob '{name}' lists a candidate twice: {_show(policy)}")
        knob = _split_knob(op, name, extent, "candidate", n, candidate=[(-1,) + c for c in cands])
    elif policy in SPLIT_POLICIES:
        knob = _split_knob(op, name, extent, policy, n)
        knob.default = _balanced(knob.candidates, extent)
    else:
        raise op.error(f"knob '{name}': unknown split policy {_show(policy)} "
                       f"({', '.join(repr(x) for x in SPLIT_POLICIES)}, or a list of factors)")
    if rest:
        d = rest[0]
        d = (-1,) + ((d,) if n == 2 and type(d) is int else tuple(d) if isinstance(d, tuple) else (d,))
        if d not in knob.candidates:
            raise op.error(f"knob '{name}': the default {_show(rest[0])} is not one of its candidates "
                           f"{_show([c[1] if n == 2 else list(c[1:]) for c in knob.candidates])}")
        knob.default = d
    return _Parsed(knob, part, extent)


def _split_knob(op, name, extent, policy, n, **kw):
    """config.split_knob, its refusals (a space too large to list) as
    errors located at `op`."""
    from .config import split_knob
    try:
        return split_knob(name, extent, policy, n, **kw)
    except ValueError as e:
        reason = str(e).removeprefix(f"define_split '{name}': ")
        raise op.error(f"knob '{name}': {reason}") from None


def _balanced(cands, extent):
    """The candidate whose loops are the most even (each part nearest
    EXTENT^(1/N)): a square tile, where AutoTVM's first (factor 1) splits
    nothing off."""
    n = len(cands[0])
    target = math.log2(extent) / n

    def cost(c):
        inner = math.prod(c[1:])
        parts = [-(-extent // inner)] + list(c[1:])
        return sum((math.log2(x) - target) ** 2 for x in parts)
    return min(cands, key=cost)


def _parse_reorder(op, key, p, name):
    S, cls = _op_kind(op)
    if name is None or len(p) not in (2, 3):
        raise op.error(f"'{key}': a reorder knob is #tune.reorder<\"NAME\", POLICY> (POLICY "
                       f"{', '.join(repr(x) for x in REORDER_POLICIES)} or a list of permutations), "
                       f"with an optional DEFAULT")
    if not (cls is S.ReorderOp and key == "perm"):
        raise op.error(f"knob '{name}': #tune.reorder gives a permutation: it stands in te.reorder's 'perm', "
                       f"not in {op.name}'s '{key}'")
    n = len(op.operands)
    policy = p[1]
    ident = tuple(range(n))
    if policy == "all":
        cands = tuple(itertools.permutations(range(n)))
    elif policy == "identity":
        cands = (ident,)
    elif isinstance(policy, tuple):
        if not policy:
            raise op.error(f"knob '{name}' has no candidates")
        if any(not isinstance(c, tuple) for c in policy):
            raise op.error(f"knob '{name}': each candidate is a permutation, a list of integers, got "
                           f"{_show(policy)}")
        _check_perms(op, name, policy)
        if len(set(policy)) != len(policy):
            raise op.error(f"knob '{name}' lists a candidate twice: {_show(policy)}")
        cands = policy
    else:
        raise op.error(f"knob '{name}': unknown reorder policy {_show(policy)} "
                       f"({', '.join(repr(x) for x in REORDER_POLICIES)}, or a list of permutations)")
    default = p[2] if len(p) == 3 else (ident if ident in cands else cands[0])
    if default not in cands:
        raise op.error(f"knob '{name}': the default {_show(default)} is not one of its candidates")
    info = f"Reorder(policy={policy if isinstance(policy, str) else 'candidate'})"
    return _Parsed(Knob(name, cands, default, kind="re", info=info))


# ---- split extents ------------------------------------------------------------

def _axis_extent(v, split_parts):
    """(extent, None) of the axis handle `v` before scheduling, or (None,
    why it is not known).  `split_parts` maps a te.split standing on a split
    knob to (knob name, part)."""
    from ..dialects.te import schedule_ops as S
    from ..dialects.te.ops import ComputeOp
    op = v.defining_op()
    if isinstance(op, S.AxesOp):
        st = op.operands[0].defining_op()
        k = op.results.index(v)
        if isinstance(st, ComputeOp):
            e = st.extents[k]
        else:
            shape = op.operands[0].type.shape
            e = shape[k] if k < len(shape) else None
        return (e, None) if isinstance(e, int) and e > 0 else (None, "its stage's extent is not a constant here")
    if isinstance(op, S.SplitOp):
        f, np_ = op.attributes.get("factor"), op.attributes.get("nparts")
        for x in (f, np_):
            if isinstance(x, DialectAttr):
                who = x.params[0] if x.params and type(x.params[0]) is str else "?"
                return None, f"it depends on knob '{who}'"
        e, why = _axis_extent(op.operands[0], split_parts)
        if e is None:
            return None, why
        inner = min(f, e) if f is not None else -(-e // np_)
        return (inner if v is op.results[1] else -(-e // inner)), None
    if isinstance(op, S.TileOp):
        k = op.results.index(v)
        axis, fkey = (op.operands[0], "x_factor") if k in (0, 2) else (op.operands[1], "y_factor")
        f = op.attributes.get(fkey)
        if isinstance(f, DialectAttr):
            return None, f"it depends on knob '{f.params[0] if f.params else '?'}'"
        e, why = _axis_extent(axis, split_parts)
        if e is None:
            return None, why
        inner = min(f, e)
        return (inner if k >= 2 else -(-e // inner)), None
    if isinstance(op, S.FuseOp):
        n = 1
        for a in op.operands:
            e, why = _axis_extent(a, split_parts)
            if e is None:
                return None, why
            n *= e
        return n, None
    return None, f"it is made by {op.name if op is not None else 'a block argument'}"


def _check_split_use(op, knob, part, extent, split_parts):
    axis = op.operands[0]
    if part > 1:
        d = axis.defining_op()
        if split_parts.get(d) != (knob.name, part - 1) or axis is not d.results[1]:
            raise op.error(f"knob '{knob.name}' part {part} splits the inner axis of its part {part - 1} "
                           f"(a te.split with the same knob and part = {part - 1})")
        return
    e, why = _axis_extent(axis, split_parts)
    if e is None:
        raise op.error(f"knob '{knob.name}': the extent of the axis it splits is not known before "
                       f"scheduling ({why}); a split knob splits an axis of constant extent")
    if e != extent:
        raise op.error(f"knob '{knob.name}' says the axis has {extent} iterations, it has {e}")


def config_space(func) -> ConfigSpace:
    """The knobs of one te.func, in order of first use; bad knobs are
    located errors."""
    knobs: dict[str, Knob] = {}
    split_parts = {}
    for op in func.walk():
        for key, attr in _knob_attrs(op):
            use = _parse(op, key, attr)
            new = use.knob
            k = knobs.get(new.name)
            if k is None:
                knobs[new.name] = k = new
            elif (k.kind, k.candidates, k.default, k.info) != (new.kind, new.candidates, new.default, new.info):
                first_op = k.uses[0][0]
                raise op.error(f"knob '{new.name}' is used again with other candidates or default",
                               notes=[(first_op.loc, f"first used here: {_show(k.candidates)}, "
                                                     f"default {_show(k.default)}")])
            if k.kind == "sp":
                _check_split_use(op, k, use.part, use.extent, split_parts)
                split_parts[op] = (k.name, use.part)
            k.uses.append((op, key, use.part))
    return ConfigSpace(func, list(knobs.values()))


def instantiate(space: ConfigSpace, entity: ConfigEntity):
    """Write the entity's plain values in place of the knobs (in
    space.func, in place): a split's factor, a reorder's perm, an
    annotation's kind."""
    for k in space.knobs:
        for op, key, part in k.uses:
            op.attributes[key] = k.plain(entity[k.name], part)
    if space.func is not None:
        _retype_rfactors(space.func)


def _retype_rfactors(func):
    """A te.rfactor over the inner axis of a split whose factor was a knob
    declares the factored dimension with the template's default: give it the
    config's factor, so the text says what the config computes."""
    from ..ir.types import TensorType
    for op in func.walk():
        if op.name != "te.rfactor":
            continue
        axis = op.operands[1]
        split = axis.defining_op()
        if split is None or split.name != "te.split" or axis is not split.results[1]:
            continue
        factor = split.attributes.get("factor")
        t = op.results[0].type
        fa = op.attributes.get("factor_axis", 0)
        if type(factor) is int and isinstance(t, TensorType) and 0 <= fa < len(t.shape) \
                and t.shape[fa] != factor:
            shape = list(t.shape)
            shape[fa] = factor
            op.results[0].type = TensorType(shape, t.element_type)


def templates(module):
    """(te.func, its ConfigSpace) for each te.func of the module with knobs."""
    from ..dialects.te.ops import FuncOp
    out = []
    for op in module.body.ops:
        if isinstance(op, FuncOp):
            space = config_space(op)
            if space.knobs:
                out.append((op, space))
    return out
