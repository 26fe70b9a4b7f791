"""Knobs and the config space of a template.

A te schedule with knobs in place of numbers is a template.  A knob is an
attribute of the tune dialect, written where the schedule op takes a value::

    #tune.knob<"NAME", [C0, C1, ...]>        a choice among the candidates;
                                             untuned, the schedule uses C0
    #tune.knob<"NAME", [C0, C1, ...], D>     ... and D untuned (one of the Ci)

for example ``te.split %i {factor = #tune.knob<"tile_i", [4, 8, 16], 8>}``.
Candidates are all integers or all strings, distinct, at least one.  A name
used twice is one knob (a tile size shared by two splits): each use must
list the same candidates and default.  Where the op needs a positive
integer (split and tile factors, nparts, storage_align's factor), every
candidate must be one.

The config space of a template is its knobs in order of first use.  Its
length is the product of the knobs' lengths; a config is an index in
[0, len), the first knob varying fastest (AutoTVM's ConfigSpace order), and
its entity is the candidate each knob takes.  ``instantiate`` writes an
entity's values in place of the knobs: what is left is a plain schedule.

A Python template's knobs (``cfg.define_split`` ..., autotvm/config.py) are
knobs of this space too, with ``func`` None and AutoTVM's kinds (``sp``,
``re``, ``an``, ``ot``): their candidates are the values logs record
(a split's sizes ``(-1, 8)``, a permutation, annotations).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.attributes import DialectAttr

KINDS = ("tune.knob",)
# schedule-op attributes that must be positive integers
POSITIVE = {"factor", "nparts", "x_factor", "y_factor"}


@dataclass
class Knob:
    name: str
    candidates: tuple
    default: object
    uses: list = field(default_factory=list)    # (op, attribute name) where it stands
    kind: str = "ot"   # AutoTVM's code in logs: ot (a choice), sp (split), re (reorder), an (annotate)
    info: str = ""     # a Python template's knob, as AutoTVM printed it: "Split(policy=factors, ...)"

    def __len__(self):
        return len(self.candidates)

    def describe(self):
        if self.info:
            return f"{self.name}: {self.info} len={len(self)}"
        return f"{self.name}: {list(self.candidates)} len={len(self)} default={self.default}"


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


def _parse(op, key, attr):
    """(name, candidates, default) of one knob attribute, or a located error."""
    if attr.name not in KINDS:
        raise op.error(f"unknown knob kind '#{attr.name}' (knobs are {', '.join('#' + k for k in KINDS)})")
    p = attr.params
    if len(p) not in (2, 3) or type(p[0]) is not str or not isinstance(p[1], tuple):
        raise op.error(f"'{key}': a knob is #tune.knob<\"NAME\", [CANDIDATES]> or "
                       f"#tune.knob<\"NAME\", [CANDIDATES], DEFAULT>")
    name, cands = p[0], p[1]
    if not name:
        raise op.error(f"'{key}': a knob needs a name")
    if not cands:
        raise op.error(f"knob '{name}' has no candidates")
    kinds = {type(c) for c in cands}
    if kinds not in ({int}, {str}):
        raise op.error(f"knob '{name}': candidates must be all integers or all strings, got {list(cands)}")
    if len(set(cands)) != len(cands):
        raise op.error(f"knob '{name}' lists a candidate twice: {list(cands)}")
    if key in POSITIVE and any(type(c) is not int or c < 1 for c in cands):
        raise op.error(f"knob '{name}': '{key}' takes positive integers, got {list(cands)}")
    default = p[2] if len(p) == 3 else cands[0]
    if default not in cands or type(default) is not type(cands[0]):
        raise op.error(f"knob '{name}': the default {default!r} is not one of its candidates {list(cands)}")
    return name, cands, default


def config_space(func) -> ConfigSpace:
    """The knobs of one te.func, in order of first use; bad knobs are
    located errors."""
    knobs: dict[str, Knob] = {}
    for op in func.walk():
        for key, attr in _knob_attrs(op):
            name, cands, default = _parse(op, key, attr)
            k = knobs.get(name)
            if k is None:
                knobs[name] = k = Knob(name, cands, default)
            elif (k.candidates, k.default) != (cands, default):
                first_op, _ = k.uses[0]
                raise op.error(f"knob '{name}' is used again with other candidates or default",
                               notes=[(first_op.loc, f"first used here: {list(k.candidates)}, "
                                                     f"default {k.default!r}")])
            k.uses.append((op, key))
    return ConfigSpace(func, list(knobs.values()))


def instantiate(space: ConfigSpace, entity: ConfigEntity):
    """Write the entity's values in place of the knobs (in space.func, in place)."""
    for k in space.knobs:
        for op, key in k.uses:
            op.attributes[key] = entity[k.name]


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
