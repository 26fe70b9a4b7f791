"""The parallel-loop runtime, emitted as LLVM IR into each module that needs it.

A ``tir.for ... parallel`` loop is outlined by the codegen into a worker

    void worker(ptr closure, i64 lo, i64 hi)     ; runs iterations [lo, hi)

whose closure is a struct of the values the body uses from outside (buffers,
outer induction variables, scalars, dynamic dimensions), and replaced by

    call void @__tvmd_parallel_for(ptr @worker, ptr %closure, i64 begin, i64 end)

``__tvmd_parallel_for`` splits [begin, end) into one contiguous chunk per
thread, starts ``nthreads - 1`` POSIX threads (``pthread_create``), runs the
first chunk on the calling thread, and joins the others.  If a thread cannot
be created its chunk runs on the caller, so the result never depends on it.
The thread count is read at every call: ``TVMD_NUM_THREADS`` when set to a
positive number (``1`` runs everything serially on the caller), otherwise
the number of online CPUs (``sysconf(_SC_NPROCESSORS_ONLN)``, cached).

The runtime only calls libc (pthread_create, pthread_join, getenv, strtol,
sysconf), which MCJIT resolves in the running process, and an object file
links against on any glibc Linux.  Chunks are static and equal: kernels are
loop nests with uniform iterations, for which this balances as well as a
work queue, without the queue.  Creating threads costs some tens of
microseconds per call; a persistent pool would save that for tiny kernels.
"""

from __future__ import annotations

from llvmlite import ir

from .irutil import I8, I32, I64, PTR, VOID, TypedCallee, alloca, c64 as _c64, cstring, declare
WORKER_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
TASK = ir.LiteralStructType([PTR, PTR, I64, I64])   # fn, closure, lo, hi

_SC_NPROCESSORS_ONLN = 84   # glibc's value (Linux)
PARALLEL_FOR = "__tvmd_parallel_for"


def _num_threads(module):
    name = "__tvmd_num_threads"
    f = module.globals.get(name)
    if f is not None:
        return f
    f = ir.Function(module, ir.FunctionType(I64, []), name)
    f.linkage = "internal"
    getenv = declare(module, "getenv", PTR, [PTR])
    strtol = declare(module, "strtol", I64, [PTR, PTR, I32])
    sysconf = declare(module, "sysconf", I64, [I32])
    envname = cstring(module, "__tvmd_env_num_threads", "TVMD_NUM_THREADS")
    cache = ir.GlobalVariable(module, I64, "__tvmd_ncpu_cache")
    cache.linkage = "internal"
    cache.initializer = _c64(0)

    entry, parse, ret_n, default, ret_c, query = (f.append_basic_block(n) for n in
                                                   ("entry", "parse", "ret_n", "default", "ret_c", "query"))
    b = ir.IRBuilder(entry)
    s = b.call(getenv, [envname])
    b.cbranch(b.icmp_unsigned("==", s, ir.Constant(PTR, None)), default, parse)
    b.position_at_end(parse)
    n = b.call(strtol, [s, ir.Constant(PTR, None), ir.Constant(I32, 10)])
    b.cbranch(b.icmp_signed(">", n, _c64(0)), ret_n, default)
    b.position_at_end(ret_n)
    b.ret(n)
    b.position_at_end(default)
    c = b.load_atomic(cache, "monotonic", 8, typ=I64)
    b.cbranch(b.icmp_signed(">", c, _c64(0)), ret_c, query)
    b.position_at_end(ret_c)
    b.ret(c)
    b.position_at_end(query)
    q = b.call(sysconf, [ir.Constant(I32, _SC_NPROCESSORS_ONLN)])
    q = b.select(b.icmp_signed(">", q, _c64(0)), q, _c64(1))
    b.store_atomic(q, cache, "monotonic", 8)
    b.ret(q)
    return f


def _thread_entry(module):
    name = "__tvmd_thread_entry"
    f = module.globals.get(name)
    if f is not None:
        return f
    f = ir.Function(module, ir.FunctionType(PTR, [PTR]), name)
    f.linkage = "internal"
    b = ir.IRBuilder(f.append_basic_block("entry"))
    task = f.args[0]
    task.name = "task"
    fields = [b.load(b.gep(task, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=TASK), typ=t)
              for k, t in enumerate((PTR, PTR, I64, I64))]
    b.call(TypedCallee(fields[0], WORKER_TYPE), fields[1:])
    b.ret(ir.Constant(PTR, None))
    return f


def parallel_for(module):
    """``void __tvmd_parallel_for(ptr fn, ptr closure, i64 begin, i64 end)``,
    emitted into `module` on first use (internal linkage)."""
    f = module.globals.get(PARALLEL_FOR)
    if f is not None:
        return f
    nthreads = _num_threads(module)
    entry_fn = _thread_entry(module)
    pcreate = declare(module, "pthread_create", I32, [PTR, PTR, PTR, PTR])
    pjoin = declare(module, "pthread_join", I32, [I64, PTR])

    f = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64, I64]), PARALLEL_FOR)
    f.linkage = "internal"
    fn, closure, begin, end = f.args
    for a, n in zip(f.args, ("fn", "closure", "begin", "end")):
        a.name = n
    blocks = {n: f.append_basic_block(n) for n in (
        "entry", "serial", "split", "spawn", "spawn.body", "spawn.inline", "spawn.next",
        "run0", "join", "join.body", "join.do", "join.next", "done")}
    b = ir.IRBuilder(blocks["entry"])
    worker = TypedCallee(fn, WORKER_TYPE)
    n = b.sub(end, begin)
    nt = b.call(nthreads, [])
    nt = b.select(b.icmp_signed("<", n, nt), n, nt)
    b.cbranch(b.icmp_signed("<=", nt, _c64(1)), blocks["serial"], blocks["split"])

    b.position_at_end(blocks["serial"])
    with b.if_then(b.icmp_signed(">", n, _c64(0))):
        b.call(worker, [closure, begin, end])
    b.ret_void()

    # chunk = ceil(n / nt); recount threads so that no chunk is empty
    b.position_at_end(blocks["split"])
    chunk = b.sdiv(b.add(n, b.sub(nt, _c64(1))), nt)
    nt = b.sdiv(b.add(n, b.sub(chunk, _c64(1))), chunk)
    tasks = alloca(b, TASK, size=nt)
    tids = alloca(b, I64, size=nt)
    started = alloca(b, I8, size=nt)
    b.branch(blocks["spawn"])

    # for t in 1 .. nt-1: start a thread on chunk t
    b.position_at_end(blocks["spawn"])
    t = b.phi(I64)
    t.add_incoming(_c64(1), blocks["split"])
    b.cbranch(b.icmp_signed("<", t, nt), blocks["spawn.body"], blocks["run0"])
    b.position_at_end(blocks["spawn.body"])
    lo = b.add(begin, b.mul(t, chunk))
    hi = b.add(lo, chunk)
    hi = b.select(b.icmp_signed("<", hi, end), hi, end)
    task = b.gep(tasks, [t], source_etype=TASK)
    for k, v in enumerate((fn, closure, lo, hi)):
        b.store(v, b.gep(task, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=TASK))
    rc = b.call(pcreate, [b.gep(tids, [t], source_etype=I64), ir.Constant(PTR, None), entry_fn, task])
    ok = b.icmp_signed("==", rc, ir.Constant(I32, 0))
    b.store(b.zext(ok, I8), b.gep(started, [t], source_etype=I8))
    b.cbranch(ok, blocks["spawn.next"], blocks["spawn.inline"])
    b.position_at_end(blocks["spawn.inline"])   # no thread: run the chunk here
    b.call(worker, [closure, lo, hi])
    b.branch(blocks["spawn.next"])
    b.position_at_end(blocks["spawn.next"])
    t.add_incoming(b.add(t, _c64(1)), blocks["spawn.next"])
    b.branch(blocks["spawn"])

    b.position_at_end(blocks["run0"])
    hi0 = b.add(begin, chunk)
    b.call(worker, [closure, begin, hi0])
    b.branch(blocks["join"])

    b.position_at_end(blocks["join"])
    j = b.phi(I64)
    j.add_incoming(_c64(1), blocks["run0"])
    b.cbranch(b.icmp_signed("<", j, nt), blocks["join.body"], blocks["done"])
    b.position_at_end(blocks["join.body"])
    was = b.load(b.gep(started, [j], source_etype=I8), typ=I8)
    b.cbranch(b.icmp_unsigned("!=", was, ir.Constant(I8, 0)), blocks["join.do"], blocks["join.next"])
    b.position_at_end(blocks["join.do"])
    b.call(pjoin, [b.load(b.gep(tids, [j], source_etype=I64), typ=I64), ir.Constant(PTR, None)])
    b.branch(blocks["join.next"])
    b.position_at_end(blocks["join.next"])
    j.add_incoming(b.add(j, _c64(1)), blocks["join.next"])
    b.branch(blocks["join"])

    b.position_at_end(blocks["done"])
    b.ret_void()
    return f


def free_values(loop_op):
    """The values a loop's body uses but does not define, in first-use order:
    what an outlined worker must receive in its closure."""
    from ...ir.core import OpResult
    seen, out = set(), []
    for op in loop_op.walk(include_self=False):
        for v in op.operands:
            if v in seen:
                continue
            if isinstance(v, OpResult):
                inside = loop_op.is_ancestor(v.op)
            else:
                owner = v.block.parent_op
                inside = owner is not None and loop_op.is_ancestor(owner)
            if not inside:
                seen.add(v)
                out.append(v)
    return out
