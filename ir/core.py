"""Operations, values, blocks and regions (MLIR's structure).

An :class:`Operation` has a name, operands, results, an attribute dict,
regions and a location.  A region holds blocks; a block holds block arguments
and an intrusive doubly linked list of operations, so inserting and erasing
an op are O(1).  Every value keeps its users (one entry per operand slot), so
``replace_all_uses_with`` and dead-code checks are cheap and always right.

Concrete ops are declared as data on a subclass::

    class ReluOp(Operation):
        name = "relay.nn.relu"
        OPERANDS = ("data",)          # "*inputs" for a variadic tail
        RESULTS = ("result",)
        ATTRS = {"alpha": Attr(FLOAT, 0.01)}
        traits = frozenset({PURE})

        def infer_types(self): ...    # result types from operand types and attrs
        def verify_(self): ...        # extra checks; raise self.error("...")
        def fold(self): ...           # constant folding, None when it cannot

``__init_subclass__`` turns the names into accessors (``op.data``,
``op.result``) and registers the op under its name.
"""

from __future__ import annotations

from typing import ClassVar, Iterator

from .diagnostics import DiagnosticError
from .location import UNKNOWN, Location
from .traits import ISOLATED_FROM_ABOVE, NO_TERMINATOR, SYMBOL, TERMINATOR

# name -> op class; filled by subclass registration and by lazy dialect loading
OP_CLASSES: dict[str, type] = {}


# -- values -------------------------------------------------------------------

class Value:
    """An SSA value.  `name` is the user's name hint (``%x``), kept through
    passes so the printed IR keeps the names the user wrote."""

    __slots__ = ("type", "name", "uses")

    def __init__(self, type, name=None):
        self.type = type
        self.name = name
        self.uses: list[Operation] = []

    @property
    def users(self):
        seen = []
        for op in self.uses:
            if op not in seen:
                seen.append(op)
        return seen

    def has_uses(self) -> bool:
        return bool(self.uses)

    def has_one_use(self) -> bool:
        return len(self.uses) == 1

    def replace_all_uses_with(self, new: "Value"):
        if new is self:
            return
        for op in self.uses:
            ops = op.operands
            for i, v in enumerate(ops):
                if v is self:
                    ops[i] = new
                    new.uses.append(op)
        self.uses = []

    def replace_uses_if(self, new: "Value", pred):
        keep = []
        for op in self.uses:
            if pred(op):
                ops = op.operands
                for i, v in enumerate(ops):
                    if v is self:
                        ops[i] = new
                        new.uses.append(op)
                        break
            else:
                keep.append(op)
        self.uses = keep

    @property
    def owner(self):
        raise NotImplementedError

    def defining_op(self):
        return None


class OpResult(Value):
    __slots__ = ("op", "index")

    def __init__(self, type, op, index, name=None):
        Value.__init__(self, type, name)
        self.op = op
        self.index = index

    @property
    def owner(self):
        return self.op

    def defining_op(self):
        return self.op

    def __repr__(self):
        return f"<OpResult #{self.index} of {self.op.name} : {self.type}>"


class BlockArgument(Value):
    __slots__ = ("block", "index")

    def __init__(self, type, block, index, name=None):
        Value.__init__(self, type, name)
        self.block = block
        self.index = index

    @property
    def owner(self):
        return self.block

    def __repr__(self):
        return f"<BlockArgument #{self.index} : {self.type}>"


# -- attribute specifications -------------------------------------------------

class AttrKind:
    """How an attribute value is checked and normalised."""

    __slots__ = ("name", "check", "coerce")

    def __init__(self, name, check, coerce=None):
        self.name = name
        self.check = check
        self.coerce = coerce


REQUIRED = object()


class Attr:
    """Declaration of one attribute: its kind, default and a one-line doc."""

    __slots__ = ("kind", "default", "doc")

    def __init__(self, kind: AttrKind, default=REQUIRED, doc: str = ""):
        self.kind = kind
        self.default = default
        self.doc = doc

    @property
    def required(self):
        return self.default is REQUIRED


# -- operations ---------------------------------------------------------------

class Operation:
    __slots__ = ("operands", "results", "attributes", "regions", "loc", "parent", "prev", "next")

    name: ClassVar[str] = ""
    traits: ClassVar[frozenset] = frozenset()
    OPERANDS: ClassVar[tuple | None] = None   # None: any number (unregistered ops)
    RESULTS: ClassVar[tuple | None] = None
    ATTRS: ClassVar[dict] = {}
    NUM_REGIONS: ClassVar[int | None] = None
    # the declarative custom syntax (ir/assembly_format.py); None: the class
    # prints with its own print_custom, or in the generic form only
    ASSEMBLY_FORMAT: ClassVar[str | None] = None
    # False only on the classes unregistered_op_class makes for ops no dialect
    # defines (--allow-unregistered-dialect): they stay out of OP_CLASSES
    registered: ClassVar[bool] = True

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        d = cls.__dict__
        if "OPERANDS" in d and cls.OPERANDS is not None:
            _make_accessors(cls, cls.OPERANDS, "operands")
        if "RESULTS" in d and cls.RESULTS is not None:
            _make_accessors(cls, cls.RESULTS, "results")
        if "ATTRS" in d:
            reserved = _reserved_names()
            for an in cls.ATTRS:
                pn = an.replace("-", "_")
                if pn not in reserved and pn not in d:
                    setattr(cls, pn, property(lambda self, an=an: self.attributes[an]))
        if d.get("name") and cls.registered:
            OP_CLASSES[cls.name] = cls
        if cls.ASSEMBLY_FORMAT is not None:
            from .assembly_format import attach_format
            attach_format(cls)

    def __init__(self, operands=(), result_types=(), attributes=None, regions=(),
                 loc: Location = UNKNOWN):
        self.operands = ops = list(operands)
        for v in ops:
            v.uses.append(self)
        self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        spec = self.ATTRS
        if spec:
            # declared attributes first, in declaration order, defaults filled in
            given = attributes or {}
            attrs = {}
            for k, a in spec.items():
                v = given.get(k, REQUIRED)
                if v is REQUIRED:
                    if a.default is not REQUIRED:
                        attrs[k] = a.default
                elif a.kind.coerce is not None:
                    attrs[k] = a.kind.coerce(v)
                else:
                    attrs[k] = v
            for k, v in given.items():
                if k not in attrs:
                    attrs[k] = v
        else:
            attrs = dict(attributes) if attributes else {}
        self.attributes = attrs
        self.regions = list(regions)
        for r in self.regions:
            r.parent = self
        self.loc = loc
        self.parent = None
        self.prev = None
        self.next = None

    # -- construction helpers ---------------------------------------------

    @classmethod
    def build(cls, *operands, loc: Location = UNKNOWN, regions=(), **attributes):
        """Create the op with result types from its ``infer_types`` hook."""
        op = cls(operands, (), attributes, regions, loc)
        op.verify_attributes()
        op.results = [OpResult(t, op, i) for i, t in enumerate(op.infer_types())]
        return op

    def infer_types(self):
        """Result types from operand types and attributes (ops override)."""
        raise self.error("cannot infer result types")

    # -- accessors ---------------------------------------------------------

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.name} has {len(self.results)} results, not one")
        return self.results[0]

    @property
    def region(self) -> "Region":
        return self.regions[0]

    @property
    def body(self) -> "Block":
        return self.regions[0].blocks[0]

    @property
    def parent_op(self):
        b = self.parent
        if b is None or b.parent is None:
            return None
        return b.parent.parent

    @property
    def block(self):
        return self.parent

    def has_trait(self, trait) -> bool:
        return trait in self.traits

    def get_attr(self, name, default=None):
        return self.attributes.get(name, default)

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"]

    def error(self, message: str, notes=()) -> DiagnosticError:
        """An error at this op, phrased as MLIR does: ``'relay.add' op ...``."""
        return DiagnosticError(self.loc, f"'{self.name}' op {message}", notes)

    def set_operand(self, i: int, v: Value):
        old = self.operands[i]
        if old is v:
            return
        old.uses.remove(self)
        self.operands[i] = v
        v.uses.append(self)

    def set_operands(self, values):
        for v in self.operands:
            v.uses.remove(self)
        self.operands = list(values)
        for v in self.operands:
            v.uses.append(self)

    def drop_operands(self):
        for v in self.operands:
            try:
                v.uses.remove(self)
            except ValueError:
                pass
        self.operands = []

    # -- structure ---------------------------------------------------------

    def walk(self, include_self=True) -> Iterator["Operation"]:
        """Pre-order walk over this op and all ops nested in its regions,
        iterative so that deep nesting never hits Python's recursion limit."""
        if include_self:
            yield self
        stack = [iter(self._child_ops())]
        while stack:
            op = next(stack[-1], None)
            if op is None:
                stack.pop()
                continue
            yield op
            if op.regions:
                stack.append(iter(op._child_ops()))

    def _child_ops(self):
        for r in self.regions:
            for b in r.blocks:
                yield from b.ops

    def detach(self):
        """Unlink from its block without touching uses."""
        b = self.parent
        if b is not None:
            b._unlink(self)
        return self

    def erase(self):
        """Unlink and drop the uses this op (and everything nested in it) makes."""
        for r in self.results:
            if r.uses:
                users = ", ".join(sorted({u.name for u in r.uses}))
                raise RuntimeError(f"erasing {self.name} whose result is still used by {users}")
        self.detach()
        for op in list(self.walk()):
            op.drop_operands()

    def is_before_in_block(self, other: "Operation") -> bool:
        op = self.next
        while op is not None:
            if op is other:
                return True
            op = op.next
        return False

    def clone(self, mapping: dict | None = None) -> "Operation":
        """Deep copy; `mapping` maps old values to new and is extended with
        the results and block arguments created."""
        if mapping is None:
            mapping = {}
        new = object.__new__(type(self))
        new.operands = ops = [mapping.get(v, v) for v in self.operands]
        for v in ops:
            v.uses.append(new)
        new.results = []
        for r in self.results:
            nr = OpResult(r.type, new, r.index, r.name)
            new.results.append(nr)
            mapping[r] = nr
        new.attributes = dict(self.attributes)
        new.regions = [r.clone(mapping) for r in self.regions]
        for r in new.regions:
            r.parent = new
        new.loc = self.loc
        new.parent = new.prev = new.next = None
        return new

    def is_ancestor(self, other: "Operation") -> bool:
        """True when `other` is this op or nested inside it."""
        while other is not None:
            if other is self:
                return True
            other = other.parent_op
        return False

    # -- verification ------------------------------------------------------

    def verify(self):
        """Structural checks against the declaration, then ``verify_``."""
        cls = type(self)
        if cls.OPERANDS is not None:
            _check_count(self, "operand", cls.OPERANDS, len(self.operands))
        if cls.RESULTS is not None:
            _check_count(self, "result", cls.RESULTS, len(self.results))
        if cls.NUM_REGIONS is not None and len(self.regions) != cls.NUM_REGIONS:
            raise self.error(f"expects {cls.NUM_REGIONS} region(s), got {len(self.regions)}")
        self.verify_attributes()
        if SYMBOL in cls.traits and not isinstance(self.attributes.get("sym_name"), str):
            raise self.error("requires a string attribute 'sym_name'")
        if self.regions and NO_TERMINATOR not in cls.traits:
            for r in self.regions:
                for b in r.blocks:
                    last = b.last
                    if last is None or TERMINATOR not in last.traits:
                        loc = last.loc if last is not None else self.loc
                        raise DiagnosticError(loc, f"block in '{self.name}' must end with a terminator")
        self.verify_()

    def verify_attributes(self):
        """Check each declared attribute's presence and kind.  Type inference
        runs this first, so a bad attribute is reported as such and not as
        whatever the inference trips over."""
        for k, a in type(self).ATTRS.items():
            v = self.attributes.get(k, REQUIRED)
            if v is REQUIRED:
                if a.required:
                    raise self.error(f"requires attribute '{k}'")
                continue
            msg = a.kind.check(v)
            if msg:
                raise self.error(f"attribute '{k}' {msg}")

    def verify_(self):
        pass

    def fold(self):
        """Return a list of replacement values/constants, or None."""
        return None

    def __repr__(self):
        from .printer import print_op
        try:
            return print_op(self)
        except Exception:  # pragma: no cover - repr must never fail
            return f"<{self.name} op>"


def _check_count(op, what, names, n):
    if names and names[-1].startswith("*"):
        fixed = len(names) - 1
        if n < fixed:
            raise op.error(f"expects at least {fixed} {what}s, got {n}")
    elif n != len(names):
        raise op.error(f"expects {len(names)} {what}{'s' if len(names) != 1 else ''}, got {n}")


def _make_accessors(cls, names, field):
    reserved = _reserved_names()
    for i, n in enumerate(names):
        variadic = n.startswith("*")
        pn = n.lstrip("*")
        if pn not in reserved and pn not in cls.__dict__:
            if variadic:
                setattr(cls, pn, property(lambda self, i=i, f=field: getattr(self, f)[i:]))
            else:
                setattr(cls, pn, property(lambda self, i=i, f=field: getattr(self, f)[i]))
        if variadic:
            break


_RESERVED: set = set()


def _reserved_names():
    if not _RESERVED:
        _RESERVED.update(dir(Operation))
    return _RESERVED


_unregistered: dict[str, type] = {}


def unregistered_op_class(name: str):
    """A class for an op no dialect defines (kept and printed generically)."""
    cls = _unregistered.get(name)
    if cls is None:
        cls = type("UnregisteredOp", (Operation,), {"name": name, "registered": False, "__slots__": ()})
        _unregistered[name] = cls
    return cls


# -- blocks and regions -------------------------------------------------------

class Block:
    __slots__ = ("args", "parent", "first", "last", "_count", "label")

    def __init__(self, arg_types=(), arg_names=None):
        self.args = [BlockArgument(t, self, i, arg_names[i] if arg_names else None)
                     for i, t in enumerate(arg_types)]
        self.parent = None
        self.first = None
        self.last = None
        self._count = 0
        self.label = None

    def add_arg(self, type, name=None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args), name)
        self.args.append(a)
        return a

    @property
    def ops(self) -> Iterator[Operation]:
        """The ops in order; safe when the current op is erased or moved."""
        op = self.first
        while op is not None:
            nxt = op.next
            yield op
            op = nxt

    def ops_reversed(self) -> Iterator[Operation]:
        op = self.last
        while op is not None:
            prv = op.prev
            yield op
            op = prv

    def __len__(self):
        return self._count

    def __iter__(self):
        return self.ops

    @property
    def terminator(self):
        last = self.last
        if last is not None and TERMINATOR in last.traits:
            return last
        return None

    @property
    def parent_op(self):
        return self.parent.parent if self.parent is not None else None

    def append(self, op: Operation) -> Operation:
        if op.parent is not None:
            op.detach()
        op.parent = self
        op.prev = self.last
        op.next = None
        if self.last is None:
            self.first = op
        else:
            self.last.next = op
        self.last = op
        self._count += 1
        return op

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        if op.parent is not None:
            op.detach()
        op.parent = self
        op.next = anchor
        op.prev = anchor.prev
        if anchor.prev is None:
            self.first = op
        else:
            anchor.prev.next = op
        anchor.prev = op
        self._count += 1
        return op

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        if anchor.next is None:
            return self.append(op)
        return self.insert_before(anchor.next, op)

    def prepend(self, op: Operation) -> Operation:
        if self.first is None:
            return self.append(op)
        return self.insert_before(self.first, op)

    def _unlink(self, op: Operation):
        if op.prev is None:
            self.first = op.next
        else:
            op.prev.next = op.next
        if op.next is None:
            self.last = op.prev
        else:
            op.next.prev = op.prev
        op.parent = op.prev = op.next = None
        self._count -= 1

    def clone_into(self, new_block: "Block", mapping: dict):
        for op in self.ops:
            new_block.append(op.clone(mapping))


class Region:
    __slots__ = ("blocks", "parent")

    def __init__(self, blocks=()):
        self.blocks = []
        self.parent = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, b: Block) -> Block:
        b.parent = self
        self.blocks.append(b)
        return b

    @property
    def block(self) -> Block:
        return self.blocks[0]

    def clone(self, mapping: dict) -> "Region":
        new = Region()
        new_blocks = []
        for b in self.blocks:
            nb = Block()
            nb.label = b.label
            for a in b.args:
                na = nb.add_arg(a.type, a.name)
                mapping[a] = na
            new.add_block(nb)
            new_blocks.append(nb)
        for b, nb in zip(self.blocks, new_blocks):
            b.clone_into(nb, mapping)
        return new


def single_block_region(arg_types=(), arg_names=None) -> Region:
    return Region([Block(arg_types, arg_names)])


def is_isolated(op: Operation) -> bool:
    return ISOLATED_FROM_ABOVE in op.traits
