"""--apply-schedule: carry out each te.func's schedule ops.

Algorithm, per te.func that still has computes:

0. carry out the stage ops (cache_read, cache_write, rfactor), which make
   new computes (stage_rewrite.py);
1. read the schedule ops in program order into stages (schedule_state.py;
   illegal requests are diagnostics at the op);
2. check each compute_at: the target axis must still be a leaf, of a stage
   that is not inlined and that is, once inlining is done, the only reader
   of the attached stage.  Nothing has changed yet when one fails;
3. erase the schedule ops; inline the compute_inline stages into their
   readers, producers first (inline.py), so a chain of inlined stages
   collapses into its consumer;
4. give each stage computed at root a ``te.realize`` at the top of the
   function (the storage its nest writes; returned ones are the outputs),
   with its scope, padding and double_buffer flag (storage.py);
5. emit the loop nests of the root stages in program order before the
   ``return`` (loop_nest.py), attached stages inside their consumer's loop;
   a te.extern becomes a ``te.extern_call`` writing its own te.realize;
6. erase the computes.

The result is a te.func of te.realize, tir.for / tir.if, arith ops and
te.read / te.write; it prints, parses and verifies like any te.func.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.pass_manager import ModulePass, option


@dataclass
class ApplySchedule(ModulePass):
    """Carry out te schedule ops: each te function becomes explicit loop nests.

    ``--apply-schedule`` applies the schedule ops in each te.func;
    ``--apply-schedule=s.te`` (or ``file=s.te``) first adds the te.schedule
    blocks of the file s.te (schedule_file.py)."""

    NAME = "apply-schedule"
    OP = "te.func"
    file: str = option("", "a file of te.schedule blocks to add to the te functions first", path=True)

    @classmethod
    def from_options(cls, text: str, base_offset: int = 0):
        t = text.strip()
        if t and "=" not in t and " " not in t:   # --apply-schedule=s.te: the path alone
            return cls(file=t)
        return super().from_options(text, base_offset)

    def run(self, module, ctx):
        from ...dialects.te.ops import FuncOp
        self._load_file(module)
        # every template of the module in one warning (run_on then finds none)
        self._count_defaults(ctx, default_untuned([op for op in module.body.ops if isinstance(op, FuncOp)]))
        super().run(module, ctx)

    def _load_file(self, module):
        """Add the schedule file's blocks to `module`, once per module (a
        nested run starts from a function)."""
        if not self.file or getattr(self, "_loaded_into", None) is module:
            return
        from .schedule_file import load_schedule_file
        load_schedule_file(module, self.file)
        self._loaded_into = module

    def run_on(self, op, ctx):
        from ...dialects.te.ops import FuncOp
        if not isinstance(op, FuncOp):
            return
        if self.file and op.parent is not None:
            self._load_file(op.parent_op)
        self._count_defaults(ctx, default_untuned([op]))   # nested under te.func(...)
        if needs_schedule(op):
            apply_to_func(op)
            ctx.stat(self, "functions scheduled")

    def _count_defaults(self, ctx, n):
        if n:
            ctx.stat(self, "templates given their default config", n)


def default_untuned(funcs) -> int:
    """Give each template among `funcs` its defaults, say so in one warning
    (report_untuned); returns how many there were."""
    filled = [f for f in map(fill_default_knobs, funcs) if f]
    report_untuned(filled)
    return len(filled)


def fill_default_knobs(func):
    """A template (a te.func whose schedule has #tune.knob values) untuned:
    each knob takes its default.  Returns (func, default values) when it
    was one, else None.  Bad knobs are located errors (autotvm/space.py)."""
    from ...autotvm.space import config_space, instantiate
    space = config_space(func)
    if not space.knobs:
        return None
    d = space.default()
    instantiate(space, d)
    return func, d.values


def report_untuned(filled):
    """One warning for the templates a run gave their defaults: the
    template and its values when there is one, else how many (the default
    schedules of a whole model are templates: one line, not one each)."""
    from ...ir.diagnostics import warning
    if not filled:
        return
    func, values = filled[0]
    if len(filled) == 1:
        warning(func.loc, f"template @{func.attributes['sym_name']} is untuned: its {len(values)} knob(s) take "
                          f"their defaults ({', '.join(f'{k}={_show(v)}' for k, v in values.items())})")
    else:
        warning(func.loc, f"{len(filled)} templates are untuned: their knobs take their defaults "
                          f"(first @{func.attributes['sym_name']}; tvm-tune tunes them, "
                          f"--apply-history-best applies a tuning log)")


def _show(v):
    """A knob's value as logs write it: a split's sizes [-1, 8], not (-1, 8)."""
    from ...autotvm.space import _show
    return _show(v) if isinstance(v, tuple) else v


def needs_schedule(func) -> bool:
    from ...dialects.te.ops import ComputeOp, ExternOp
    from ...dialects.te.schedule_ops import ScheduleOp
    return any(isinstance(op, (ComputeOp, ExternOp, ScheduleOp)) for op in func.body.ops)


def apply_to_func(func):
    from ...dialects.te.ops import ARG_REDUCERS, ExternCallOp, ExternOp, RealizeOp
    from ...ir import types as T
    from .inline import inline_stage
    from .loop_nest import NestBuilder
    from .schedule_state import Schedule, Stage
    from .stage_rewrite import rewrite_stages
    from .storage import realize_for

    fill_default_knobs(func)   # a template called directly: its defaults (the passes say so first)
    rewrite_stages(func)
    sched = Schedule(func).read()
    live = [st for st in sched.stages if st.attach != "inline"]
    nb = NestBuilder(func.body)
    for st in live:   # checked before anything changes
        if st.attach != "root":
            target, iv = st.attach
            check_attach(sched, st, target, iv)
            nb.attached.setdefault((target, iv), []).append(st)
    for op in reversed(sched.ops):
        op.erase()
    for st in sched.stages:
        if st.attach == "inline":
            inline_stage(st.compute)
            st.compute.erase()

    r_of = {}
    by_compute = {st.compute: st for st in live if st.attach == "root"}
    order = [by_compute.get(op, op) for op in func.body.ops if op in by_compute or isinstance(op, ExternOp)]
    ret = func.return_op.detach()
    # storage goes first, after the index arithmetic of sizes (a concatenation's sum)
    anchor = next((op for op in func.body.ops if op.name.startswith("te.")), None)
    for st in order:
        if not isinstance(st, Stage):   # a te.extern: storage for its result
            r = RealizeOp(st.result_sizes(), [st.results[0].type], {}, (), st.loc)
            func.body.insert_before(anchor, r) if anchor is not None else func.body.append(r)
            r.results[0].name = st.results[0].name
            st.results[0].replace_all_uses_with(r.results[0])
            r_of[st] = r.results[0]
            continue
        if st.attach == "root":
            c = st.compute
            out = c.results[0] in sched.outputs
            # (a reduction over '?' extents into a static result, a whole
            # tensor's min, has static storage: only its loops are dynamic)
            if c.operands and not out and not c.tensor_type.is_static:
                raise c.error("a stage of dynamic shape must be an output of the function or inlined "
                              "(intermediate buffers are static)")
            if any(v.defining_op() is not None and (v.defining_op().parent is not func.body
                                                    or v.defining_op().name.startswith("te."))
                   for v in c.operands):
                raise c.error("the sizes of a dynamic stage must be parameters of the function "
                              "or index arithmetic on them at its top level")
            # the result's '?' sizes (the operands go on with the '?' reduce extents)
            r = realize_for(st, c.tensor_type, c.loc, output=out, sizes=[d for d in c.shape if not isinstance(d, int)])
            if anchor is None:
                func.body.append(r)
            else:
                func.body.insert_before(anchor, r)
            r.results[0].name = c.results[0].name
            c.results[0].replace_all_uses_with(r.results[0])
            nb.buffers[st] = r.results[0]
            if c.reducer in ARG_REDUCERS:   # the best value so far, beside the position
                vr = RealizeOp((), [T.TensorType(c.tensor_type.shape, c.yielded.type)], {}, (), c.loc)
                func.body.insert_before(r, vr)
                vr.results[0].name = (c.results[0].name or "arg") + "_val"
                nb.vals[st] = vr.results[0]
    nb.e.at(func.body)
    for st in order:
        if isinstance(st, Stage):
            nb.emit_stage(st)
        else:
            call = ExternCallOp(list(st.operands) + [r_of[st]], [], {"callee": st.attributes["callee"]}, (), st.loc)
            func.body.append(call)
    func.body.append(ret)
    for st in reversed(live):
        st.compute.erase()
    for st in order:
        if not isinstance(st, Stage):
            st.erase()


def readers(sched, st):
    """The stages that read `st` once inlining is done: its readers, with
    each inlined one replaced by its own readers."""
    out = []
    for u in st.compute.results[0].users:
        r = sched.by_value.get(u.parent_op.results[0]) if u.parent_op is not None and u.parent_op.results else None
        if r is None:
            continue
        for x in (readers(sched, r) if r.attach == "inline" else [r]):
            if x not in out:
                out.append(x)
    return out


def check_attach(sched, st, target, iv):
    op = st.attach_op
    if target.attach == "inline":
        raise op.error(f"cannot compute '{st.name}' at an axis of '{target.name}', which is inlined")
    if iv not in target.leaves:
        raise op.error(f"axis '{iv.name}' of '{target.name}' was split or fused after it was named here; "
                       "attach to one of the axes that made")
    from ...dialects.te.ops import ExternOp
    ext = next((u for u in st.compute.results[0].users if isinstance(u, ExternOp)), None)
    if ext is not None:
        raise op.error(f"'{st.name}' is also read by the te.extern @{ext.attributes['callee'].name}; "
                       "compute_at needs a single consumer", notes=[(ext.loc, "read here")])
    rs = readers(sched, st)
    pos = target.leaves.index(iv)

    def inside(r):   # runs within each iteration of iv: the target, or a stage computed at it or
        # deeper, directly or through stages computed there in turn
        while r is not target:
            if r.attach in ("root", "inline"):
                return False
            at, axis = r.attach
            if at is target:
                return target.leaves.index(axis) >= pos
            r = at
        return True
    if target not in rs and not any(inside(r) for r in rs):
        raise op.error(f"axis '{iv.name}' belongs to '{target.name}', which does not read '{st.name}'"
                       + (f" (nor computes a reader of it at a loop inside '{iv.name}')"
                          if any(r.attach != "root" and r.attach[0] is target for r in rs) else ""))
    others = [r for r in rs if not inside(r)]
    if others:
        raise op.error(f"'{st.name}' is also read by '{others[0].name}'; compute_at needs a single consumer",
                       notes=[(others[0].compute.loc, "also read here")])
