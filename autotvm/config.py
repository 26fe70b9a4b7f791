"""``cfg`` of a Python template: AutoTVM's define_* and its entities.

    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)          # a knob of kind "sp"
    yo, yi = cfg["tile_y"].apply(s, C, y)                 # SplitEntity: .size [-1, 32]
    cfg.define_knob("unroll", [0, 1])                     # "ot": cfg["unroll"].val
    cfg.define_reorder("re", axes, policy="all")          # "re": .perm, .apply(s, C, axes)
    cfg.define_annotate("an", axes, policy="try_unroll")  # "an": .anns, .apply(s, C, axes, ...)

Each define_* makes one :class:`~.space.Knob` of the template's
:class:`~.space.ConfigSpace` (the space text knobs live in too), whose
candidates are the knob's values as AutoTVM logs them: a split's sizes
``(-1, f1, ..., fn)`` (-1 the outer extent, inferred), a reorder's
permutation, an annotation's list, a plain knob's value.  The first
candidate is the default (AutoTVM's fallback takes entity 0).

A :class:`TemplateConfig` is the ``cfg`` the template sees: while the space
is being collected (``space`` given, no ``entity``) define_* adds knobs and
``cfg[name]`` is the default; when a config is applied (``entity`` given)
define_* only checks the name and ``cfg[name]`` is that config's value.

Split candidates, AutoTVM's policies: ``factors`` (every divisor; the inner
sizes' product divides the extent), ``power2`` (powers of two up to the
extent; a tail allowed), ``verbose`` (both), ``candidate`` (the lists
given); ``max_factor`` bounds each inner size, ``filter(entity)`` keeps a
candidate, ``no_tail`` forces divisibility.  Enumeration order: the
innermost size varies slowest (AutoTVM's order, so indices of its logs
agree).
"""

from __future__ import annotations

import itertools
import math

from .space import ConfigSpace, Knob


class InstantiationError(ValueError):
    """A config the template rejects (``cfg.raise_error``): an
    INSTANTIATION_ERROR record when tuning."""


class VirtualAxis:
    """``cfg.axis(x)``: an axis of a given length, for define_* only."""

    def __init__(self, var, name=None):
        self.length = axis_length(var)
        self.name = name or getattr(var, "name", "axis")

    def __repr__(self):
        return f"vaxis({self.name})"


def axis_length(axis) -> int:
    if isinstance(axis, bool):
        raise TypeError(f"expected an axis or a length, got {axis!r}")
    if isinstance(axis, int):
        return axis
    if isinstance(axis, VirtualAxis):
        return axis.length
    extent = getattr(axis, "extent", None)
    if isinstance(extent, int):
        return extent
    raise TypeError(f"expected an axis (IterVar) with a constant extent or a length, got {axis!r}")


# ---- entities: what cfg[name] returns ---------------------------------------

class SplitEntity:
    def __init__(self, size):
        self.size = list(size)

    def apply(self, sch, op, axis):
        """Split `axis` of stage `op` into len(size) loops, outer first."""
        out = []
        for i in range(1, len(self.size)):
            outer, axis = sch[op].split(axis, factor=math.prod(self.size[i:]))
            out.append(outer)
        return out + [axis]

    def __repr__(self):
        return str(self.size)


class ReorderEntity:
    def __init__(self, perm):
        self.perm = list(perm)

    def apply(self, sch, op, axes):
        """Reorder `axes` as perm says (axes[perm[0]] outermost)."""
        order = [axes[i] for i in self.perm if i < len(axes)]
        sch[op].reorder(*order)
        return order

    def __repr__(self):
        return str(self.perm)


class AnnotateEntity:
    def __init__(self, anns):
        self.anns = list(anns)

    def apply(self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None):
        """Unroll or vectorize each axis as its annotation says; an unroll
        longer than `max_unroll`, or a vector of a length not in
        `vec_size`, makes the config invalid (``cfg.raise_error``)."""
        if source is not None:
            raise NotImplementedError("define_annotate: the locate_cache form (source=) is not supported")
        for i, ann in enumerate(self.anns):
            n = axis_lens[i] if axis_lens is not None else None
            if ann == "unroll":
                if max_unroll and n is not None and n > max_unroll:
                    _raise(cfg, f"unrolling {n} iterations is more than max_unroll={max_unroll}")
                sch[op].unroll(axes[i])
            elif ann == "vec":
                if vec_size and n is not None and n not in vec_size:
                    _raise(cfg, f"a vector of {n} lanes is not one of {list(vec_size)}")
                sch[op].vectorize(axes[i])
            elif ann != "none":
                raise ValueError(f"annotation '{ann}' is not supported (none, unroll, vec are)")
        return axes

    def __repr__(self):
        return str(self.anns)


class OtherOptionEntity:
    def __init__(self, val):
        self.val = val

    def __repr__(self):
        return str(self.val)


ENTITY = {"sp": SplitEntity, "re": ReorderEntity, "an": AnnotateEntity, "ot": OtherOptionEntity}


def _raise(cfg, msg):
    if cfg is None:
        raise InstantiationError(msg)
    cfg.raise_error(msg)


# ---- knobs --------------------------------------------------------------------

def _divisors(n):
    """The divisors of n, ascending, in O(sqrt n) (an extent may be 2**32)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


# A split knob with more candidates than this is refused: its space could
# not be searched, and listing it would take minutes (4 outputs over an
# extent with many divisors)
MAX_SPLIT_CANDIDATES = 100_000
# Bounds that keep listing a split's sizes fast: outputs beyond any loop
# nest's depth, and extents beyond any buffer's (sqrt(2**40) trials to divide)
MAX_SPLIT_OUTPUTS = 16
MAX_SPLIT_EXTENT = 1 << 40


def _inner_sizes(factors, k, extent, exact, name):
    """The k-tuples of `factors` (the first varying slowest) whose product
    is at most `extent` and, when `exact`, divides it.  A prefix that
    already fails cannot be completed (every size is at least 1), so the
    walk prunes it instead of listing len(factors)**k tuples."""
    out = []

    def walk(prefix, p):
        if len(prefix) == k:
            out.append(tuple(prefix))
            if len(out) > MAX_SPLIT_CANDIDATES:
                raise ValueError(f"define_split '{name}': more than {MAX_SPLIT_CANDIDATES} candidates "
                                 f"(extent {extent}, {k + 1} outputs); use fewer outputs, policy power2 "
                                 f"or a list of candidates")
            return
        for f in factors:
            q = p * f
            if q > extent:
                break   # factors ascend
            if not exact or extent % q == 0:
                walk(prefix + [f], q)
    walk([], 1)
    return out


def _pow2s(n):
    return [1 << k for k in range(max(n, 1).bit_length())]


def split_knob(name, axis, policy="factors", num_outputs=2, max_factor=None, filter=None,  # noqa: A002
               candidate=None, no_tail=None):
    extent = axis_length(axis)
    n = int(num_outputs)
    if not 1 <= n <= MAX_SPLIT_OUTPUTS:
        raise ValueError(f"define_split '{name}': num_outputs must be 1 to {MAX_SPLIT_OUTPUTS}, got {num_outputs}")
    if extent > MAX_SPLIT_EXTENT:
        raise ValueError(f"define_split '{name}': an extent of {extent} is more than a loop can have "
                         f"(at most 2**{MAX_SPLIT_EXTENT.bit_length() - 1})")
    if policy == "candidate":
        if not candidate:
            raise ValueError(f"define_split '{name}': policy 'candidate' needs candidate=[[...], ...]")
        cands = []
        for c in candidate:
            c = tuple(int(x) for x in c)
            if len(c) != n:
                raise ValueError(f"define_split '{name}': candidate {list(c)} has {len(c)} sizes, "
                                 f"num_outputs is {n}")
            cands.append(c)
    else:
        if policy == "factors":
            factors = _divisors(extent)
        elif policy == "power2":
            factors = _pow2s(extent)
        elif policy == "verbose":
            factors = sorted(set(_divisors(extent)) | set(_pow2s(extent)))
        else:
            raise ValueError(f"define_split '{name}': unknown policy '{policy}' "
                             f"(factors, power2, verbose, candidate)")
        if max_factor is not None:
            factors = [f for f in factors if f <= max_factor]
        exact = policy == "factors" if no_tail is None else bool(no_tail)
        cands = [(-1,) + inner[::-1] for inner in _inner_sizes(factors, n - 1, extent, exact, name)]
    if filter is not None:
        cands = [c for c in cands if filter(SplitEntity(c))]
    cands = list(dict.fromkeys(cands))
    if not cands:
        raise ValueError(f"define_split '{name}': no candidate is left (policy {policy}, extent {extent})")
    return Knob(name, tuple(cands), cands[0], kind="sp",
                info=f"Split(policy={policy}, product={extent}, num_outputs={n})")


def reorder_knob(name, axes, policy, interval=None, candidate=None):
    axes = list(axes)
    n = len(axes)
    if policy == "identity":
        perms = [tuple(range(n))]
    elif policy == "all":
        perms = list(itertools.permutations(range(n)))
    elif policy == "interval_all":
        if interval is None:
            raise ValueError(f"define_reorder '{name}': policy 'interval_all' needs interval=(begin, end)")
        b, e = interval
        perms = [tuple(range(b)) + p + tuple(range(e, n)) for p in itertools.permutations(range(b, e))]
    elif policy == "candidate":
        if not candidate:
            raise ValueError(f"define_reorder '{name}': policy 'candidate' needs candidate=[[axes...], ...]")
        perms = []
        for c in candidate:
            try:
                perms.append(tuple(next(i for i, a in enumerate(axes) if a is x) for x in c))
            except StopIteration:
                raise ValueError(f"define_reorder '{name}': a candidate lists an axis that is not "
                                 f"among the axes given") from None
    else:
        raise ValueError(f"define_reorder '{name}': unknown or unsupported policy '{policy}' "
                         f"(identity, all, interval_all, candidate)")
    perms = list(dict.fromkeys(perms))
    return Knob(name, tuple(perms), perms[0], kind="re", info=f"Reorder(policy={policy})")


def annotate_knob(name, axes, policy):
    options = policy.replace("try", "none").split("_")
    if not options or any(o not in ("none", "unroll", "vec") for o in options):
        raise ValueError(f"define_annotate '{name}': unknown or unsupported policy '{policy}' "
                         f"(try_unroll, try_vec, try_unroll_vec, unroll, vec, ...)")
    anns = [a for a in itertools.product(options, repeat=len(list(axes))) if a.count("vec") <= 1]
    return Knob(name, tuple(anns), anns[0], kind="an", info=f"Annotate(policy={policy})")


def other_knob(name, candidate):
    cands = tuple(tuple(c) if isinstance(c, list) else c for c in candidate)
    if not cands:
        raise ValueError(f"define_knob '{name}': no candidates")
    return Knob(name, cands, cands[0], kind="ot", info=f"OtherOption({list(cands)})")


# ---- cfg ------------------------------------------------------------------------

class TemplateConfig:
    """The ``cfg`` a Python template defines its knobs on (module docstring)."""

    def __init__(self, space: ConfigSpace, entity=None, is_fallback=False):
        self.space = space
        self.entity = entity
        self.is_fallback = is_fallback
        self.flop = 0.0
        self.errors = []

    @property
    def index(self):
        return self.entity.index if self.entity is not None else self.space.default().index

    @property
    def collecting(self):
        return self.entity is None

    def _add(self, knob):
        if self.entity is not None:
            return
        old = next((k for k in self.space.knobs if k.name == knob.name), None)
        if old is None:
            self.space.knobs.append(knob)
        elif (old.kind, old.candidates) != (knob.kind, knob.candidates):
            raise ValueError(f"knob '{knob.name}' is defined twice, with other candidates")

    def define_split(self, name, axis, policy="factors", **kwargs):
        self._add(split_knob(name, axis, policy, **kwargs))

    def define_reorder(self, name, axes, policy, **kwargs):
        self._add(reorder_knob(name, axes, policy, **kwargs))

    def define_annotate(self, name, axes, policy, **kwargs):
        self._add(annotate_knob(name, axes, policy, **kwargs))

    def define_knob(self, name, candidate):
        self._add(other_knob(name, candidate))

    axis = reduce_axis = staticmethod(VirtualAxis)

    def add_flop(self, flop):
        self.flop += float(getattr(flop, "value", flop))

    def raise_error(self, msg):
        self.errors.append(str(msg))

    def valid(self):
        return not self.errors

    def __getitem__(self, name):
        knob = next((k for k in self.space.knobs if k.name == name), None)
        if knob is None:
            raise KeyError(f"no knob '{name}' is defined (define it with cfg.define_*(\"{name}\", ...) first)")
        value = knob.default if self.entity is None else self.entity[name]
        return ENTITY[knob.kind](value)

    def __contains__(self, name):
        return any(k.name == name for k in self.space.knobs)

    def __iter__(self):
        return iter([k.name for k in self.space.knobs])

    def __len__(self):
        return len(self.space)

    def __repr__(self):
        what = "fallback" if self.is_fallback else f"index={self.index}"
        body = ", ".join(f"{n}: {self[n]}" for n in self)
        return f"Config({what}; {body})"
