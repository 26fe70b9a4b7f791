"""The parallel-loop runtime: a persistent thread pool, written in LLVM IR.

A ``tir.for ... parallel`` loop is outlined by the codegen into a worker

    void worker(ptr closure, i64 lo, i64 hi)     ; runs iterations [lo, hi)

whose closure is a struct of the values the body uses from outside (buffers,
outer induction variables, scalars, dynamic dimensions), and replaced by

    call void @__tvmd_parallel_for(ptr @worker, ptr %closure, i64 begin, i64 end)

Kernel modules only *declare* ``__tvmd_parallel_for``; :func:`link_runtime`
supplies the definition (:data:`RUNTIME_IR`):

* JIT (``jit.compile``): the runtime is compiled once per process into its
  own engine, which is never freed, and registered with ``llvm.add_symbol``;
  every kernel module then shares one pool.  (A pool per module would leave
  its sleeping threads inside code that is freed with the module.)
* objects, assembly, LLVM text: the runtime is linked into the module with
  internal linkage, so an object file is self-contained (it calls only libc:
  pthread_create, pthread_detach, getpid, getenv, strtol, sysconf,
  syscall) and links on any glibc Linux.

The algorithm.  ``__tvmd_parallel_for`` uses ``nt = min(threads, end -
begin)`` threads and gives thread ``t`` (0: the caller) the range ``[begin
+ t*n/nt, begin + (t+1)*n/nt)``, cut into chunks of ``grain = ceil(n /
(nt * CHUNKS_PER_THREAD))`` iterations that are taken from the range's own
counter (an atomic add per chunk, a cache line per counter).  A thread
takes the chunks of its own range first, then those left in the others'
(t+1, t+2, ... in turn), so a thread slowed down by another process on its
core has the rest of its range taken instead of holding up the join (this
machine is shared).  Owning a range keeps a thread on the same part of
every kernel's iteration space: consecutive kernels over the same
tensor rows find them in the cache of the core that wrote them, where
chunks dealt from one shared counter landed on either core by chance
(MobileNetV2's depthwise convs at 2 threads, 14x14x384: 52 -> 35 us, the
whole model 1.19x -> 0.92-1.01x onnxruntime).  The
calling thread takes the pool with a compare-and-swap on ``busy``; if
another call holds it (a second Python thread, or a nested parallel call)
it runs the whole range serially itself, so callers never wait on each
other and the result never depends on the pool.  Holding it, it starts any
missing workers (created once, detached, living for the process), writes
the job (begin, n, nt, grain) and sets each range's counter to its start,
then for each worker ``t`` in 1..nt-1 writes fn, closure and ``t`` into
that worker's own 64-byte slot and bumps the slot's generation counter;
it takes chunks itself until none are left, then waits for the shared ``pending`` counter to reach zero.  A worker
spins on its slot's generation (``pause``), and after ``SPIN`` polls sleeps
on it with a futex; the signaller calls futex-wake only when the slot's
``sleeping`` flag is set (both sides use sequentially consistent accesses,
so either the worker sees the new generation before sleeping or the
signaller sees the flag).  A woken worker claims its slot (a
compare-and-swap on ``claim``), takes chunks until none are left and
counts ``pending`` down.  When the caller runs out of chunks it *cancels*
every slot no worker has claimed yet (the same compare-and-swap), counting
those down itself, so a descheduled or sleeping worker costs nothing; then
it waits on ``pending`` the same way.  Every iteration is taken exactly
once (its range's counter), and a worker only ever reads a job it won.

Why it cannot hang or run a chunk twice (the protocol, invariant by invariant):

* one writer: only the ``busy`` holder writes slots, ``pending`` and the
  pool size; the lock word is the holder's *pid*, taken by compare-and-swap
  (0 -> pid) and released with a release store;
* publication: the caller writes the job, the counters, fn, closure and
  the thread index with plain (or monotonic) stores,
  then ``claim = 0`` (seq_cst), then ``gen + 1``; a worker reads them only
  after winning ``claim`` 0 -> 1 (seq_cst), which orders the plain loads
  after the plain stores.  The next call rewrites a slot only after
  ``pending`` reached 0 (acquire), i.e. after every winner finished reading;
* exactly once: each chunk is handed out once by its range's atomic
  counter, and the caller returns from its own taking only when every
  range's counter has passed its end; each
  posted slot is claimed once, by its worker (1) or cancelled by the
  caller (2), and whoever wins decrements ``pending`` (a worker after its
  last chunk), so the caller returns only after every chunk taken has
  finished, and no worker touches the counter after that.  A worker that
  saw a stale generation only ever tries the claim, so it can take at most
  a job that was posted (claim 0) and never one in progress;
  ``claim`` stays 1 or 2 outside a post (or the slot was never posted, and
  its new worker, at generation 0, does not try), and ``gen`` wraps only
  after 2^32 posts (no ABA in practice);
* no lost wake-up: both sleeps are Dekker pairs on seq_cst accesses plus the
  futex's own value check (the kernel sleeps only if the word still holds the
  value the sleeper saw): worker ``sleeping = 1; gen == my ? wait(gen, my)``
  against caller ``gen += 1; sleeping ? wake``; caller ``waiting = 1;
  p = pending; p ? wait(pending, p)`` against the last worker
  ``pending -= 1 == 0; waiting ? wake``;
* the caller waits only for workers that *claimed* their job: once the
  chunks run out it cancels every unclaimed slot, so a worker that is asleep,
  descheduled, or missing (a failed ``pthread_create``, a recycled pid)
  never blocks it.  As a second guard against a lost wake-up its futex
  sleep has a timeout (``JOIN_TIMEOUT_NS``), after which it re-checks;
* workers run only runtime code (never freed) between jobs, and kernel code
  only inside a call that is waiting for them, so freeing a JIT'd module
  or exiting the interpreter while they sleep or spin is safe (process
  exit ends them wherever they are).

The thread count is read at every call: ``TVMD_NUM_THREADS`` when set to a
positive number (``1`` runs serially on the caller, no thread is created),
otherwise the number of online CPUs (``sysconf``, cached); at most
``MAX_WORKERS + 1``.  If a thread cannot be created, fewer threads take the chunks.
(``getenv`` is not safe against a concurrent ``setenv`` in glibc: change
``os.environ["TVMD_NUM_THREADS"]`` only while no other thread is inside a
kernel.)

After ``fork`` the child has none of the parent's workers: the pool records
the pid that started its workers and, in another process, starts afresh; a
lock word holding another pid belongs to a parent's thread, absent from the
child, and is taken over (``pthread_atfork`` would be neater, but glibc does
not export it to a JIT).  The JIT's shared runtime is compiled under a
Python lock (llvmlite drops the GIL), so a process has exactly one.
"""

from __future__ import annotations

import threading

from llvmlite import ir

from .irutil import I64, PTR, VOID, declare

WORKER_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
PARALLEL_FOR = "__tvmd_parallel_for"
MAX_WORKERS = 255
CHUNKS_PER_THREAD = 4   # chunks per thread's range: what another thread can steal when one falls behind
# Polls (with pause) before a waiting worker sleeps: about 1 ms of spinning
# here.  With 4096 (about 0.1 ms) the workers fell asleep between the
# parallel kernels of small models, and each futex wake of a sleeping vCPU
# cost tens of microseconds: SqueezeNet at 2 threads ran at 1.7x
# onnxruntime with an 80% spread over runs, 1.36x with a 6% spread now.
SPIN = 65536
JOIN_TIMEOUT_NS = 20_000_000   # the caller's futex sleep re-checks `pending` at least this often

_SC_NPROCESSORS_ONLN = 84   # glibc's value (Linux)
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "riscv64": 98, "powerpc64": 221, "powerpc64le": 221}
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129


def parallel_for(module):
    """``void __tvmd_parallel_for(ptr fn, ptr closure, i64 begin, i64 end)``,
    declared in the kernel module on first use."""
    return declare(module, PARALLEL_FOR, VOID, [PTR, PTR, I64, I64])


def runtime_ir(triple: str) -> str:
    """The runtime's LLVM IR text for `triple`."""
    arch = triple.split("-")[0]
    futex = _SYS_FUTEX.get(arch)
    if futex is None:
        # no futex number known: never sleep, spin (correct, only wasteful)
        wait_body = "  ret void"
        wake_body = "  ret void"
    else:
        wait_body = (f"  %r = call i64 (i64, ...) @syscall(i64 {futex}, ptr %addr, i64 {_FUTEX_WAIT_PRIVATE}, "
                     f"i64 %v, ptr %timeout)\n  ret void")
        wake_body = (f"  %r = call i64 (i64, ...) @syscall(i64 {futex}, ptr %addr, i64 {_FUTEX_WAKE_PRIVATE}, "
                     f"i64 2147483647)\n  ret void")
    x86 = arch in ("x86_64", "i686", "i386")
    pause = "  call void @llvm.x86.sse2.pause()\n" if x86 else ""
    pause_decl = "declare void @llvm.x86.sse2.pause()\n" if x86 else ""
    return _RUNTIME.format(MAXW=MAX_WORKERS, MAXT=MAX_WORKERS + 1, SPIN=SPIN, CHUNKS=CHUNKS_PER_THREAD, SC=_SC_NPROCESSORS_ONLN, PAUSE=pause,
                           JOIN_NS=JOIN_TIMEOUT_NS,
                           PAUSE_DECL=pause_decl, WAIT_BODY=wait_body, WAKE_BODY=wake_body)


# One slot per worker, a cache line each: gen (futex word), sleeping, fn,
# closure, the worker's thread index, (unused), claim (0 open, 1 taken by
# the worker, 2 by the caller).  One chunk counter per thread's range, a
# cache line each; the job's begin, n, threads and grain.  Functions are external here so that the kernel's
# declaration links to them; link_runtime makes them internal in objects.
_RUNTIME = r"""
%slot = type {{ i32, i32, ptr, ptr, i64, i64, i32, [20 x i8] }}

@__tvmd_pool_slots = internal global [{MAXW} x %slot] zeroinitializer, align 64
@__tvmd_pool_size = internal global i64 0, align 64
@__tvmd_pool_busy = internal global i32 0, align 64
@__tvmd_pool_pending = internal global i32 0, align 64
@__tvmd_pool_waiting = internal global i32 0, align 64
%ctr = type {{ i64, [56 x i8] }}
@__tvmd_pool_ctr = internal global [{MAXT} x %ctr] zeroinitializer, align 64
@__tvmd_pool_job = internal global {{ i64, i64, i64, i64 }} zeroinitializer, align 64
@__tvmd_pool_pid = internal global i32 0
@__tvmd_ncpu_cache = internal global i64 0
@__tvmd_env_num_threads = private unnamed_addr constant [17 x i8] c"TVMD_NUM_THREADS\00"
@__tvmd_join_timeout = internal constant {{ i64, i64 }} {{ i64 0, i64 {JOIN_NS} }}

declare ptr @getenv(ptr)
declare i64 @strtol(ptr, ptr, i32)
declare i64 @sysconf(i32)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @getpid()
declare i64 @syscall(i64, ...)
{PAUSE_DECL}
; TVMD_NUM_THREADS if a positive number, else the online CPUs (cached)
define i64 @__tvmd_num_threads() {{
entry:
  %s = call ptr @getenv(ptr @__tvmd_env_num_threads)
  %unset = icmp eq ptr %s, null
  br i1 %unset, label %default, label %parse
parse:
  %n = call i64 @strtol(ptr %s, ptr null, i32 10)
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %ret_n, label %default
ret_n:
  ret i64 %n
default:
  %c = load atomic i64, ptr @__tvmd_ncpu_cache monotonic, align 8
  %known = icmp sgt i64 %c, 0
  br i1 %known, label %ret_c, label %query
ret_c:
  ret i64 %c
query:
  %q = call i64 @sysconf(i32 {SC})
  %qpos = icmp sgt i64 %q, 0
  %q1 = select i1 %qpos, i64 %q, i64 1
  store atomic i64 %q1, ptr @__tvmd_ncpu_cache monotonic, align 8
  ret i64 %q1
}}

define internal void @__tvmd_futex_wait(ptr %addr, i32 %val, ptr %timeout) {{
entry:
  %v = zext i32 %val to i64
{WAIT_BODY}
}}

define internal void @__tvmd_futex_wake(ptr %addr) {{
entry:
{WAKE_BODY}
}}

; thread t takes chunks of its own range first, then of the others' in turn
; (t+1, t+2, ...) until none are left; range r is [begin + r*n/nt, begin + (r+1)*n/nt)
define internal void @__tvmd_pool_drain(ptr %fn, ptr %cl, i64 %t) {{
entry:
  %begin = load i64, ptr @__tvmd_pool_job, align 8
  %np = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 1
  %n = load i64, ptr %np, align 8
  %ntp = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 2
  %nt = load i64, ptr %ntp, align 8
  %gp = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 3
  %grain = load i64, ptr %gp, align 8
  br label %range
range:
  %i = phi i64 [ 0, %entry ], [ %i1, %range.next ]
  %rmore = icmp slt i64 %i, %nt
  br i1 %rmore, label %range.body, label %done
range.body:
  %ti = add i64 %t, %i
  %wrap = icmp sge i64 %ti, %nt
  %tw = sub i64 %ti, %nt
  %r = select i1 %wrap, i64 %tw, i64 %ti
  %r1 = add i64 %r, 1
  %m = mul i64 %r1, %n
  %q = sdiv i64 %m, %nt
  %rend = add i64 %begin, %q
  %cp = getelementptr [{MAXT} x %ctr], ptr @__tvmd_pool_ctr, i64 0, i64 %r, i32 0
  br label %take
take:
  %lo = atomicrmw add ptr %cp, i64 %grain monotonic
  %more = icmp slt i64 %lo, %rend
  br i1 %more, label %run, label %range.next
run:
  %hi0 = add i64 %lo, %grain
  %lt = icmp slt i64 %hi0, %rend
  %hi = select i1 %lt, i64 %hi0, i64 %rend
  call void %fn(ptr %cl, i64 %lo, i64 %hi)
  br label %take
range.next:
  %i1 = add i64 %i, 1
  br label %range
done:
  ret void
}}

; a worker: wait for its slot's generation to change, run the chunk, count down
define internal ptr @__tvmd_pool_worker(ptr %slot) {{
entry:
  %genp = getelementptr %slot, ptr %slot, i32 0, i32 0
  %sleepp = getelementptr %slot, ptr %slot, i32 0, i32 1
  %fnp = getelementptr %slot, ptr %slot, i32 0, i32 2
  %clp = getelementptr %slot, ptr %slot, i32 0, i32 3
  %lop = getelementptr %slot, ptr %slot, i32 0, i32 4
  br label %wait
wait:
  %my = phi i32 [ 0, %entry ], [ %g, %next ]
  br label %spin
spin:
  %k = phi i32 [ 0, %wait ], [ %k1, %spin.next ], [ 0, %woke ]
  %gs = load atomic i32, ptr %genp acquire, align 4
  %new = icmp ne i32 %gs, %my
  br i1 %new, label %run, label %spin.next
spin.next:
{PAUSE}  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, {SPIN}
  br i1 %more, label %spin, label %sleep
sleep:
  store atomic i32 1, ptr %sleepp seq_cst, align 4
  %gq = load atomic i32, ptr %genp seq_cst, align 4
  %same = icmp eq i32 %gq, %my
  br i1 %same, label %dowait, label %woke
dowait:
  call void @__tvmd_futex_wait(ptr %genp, i32 %my, ptr null)
  br label %woke
woke:
  store atomic i32 0, ptr %sleepp seq_cst, align 4
  br label %spin
run:
  %g = phi i32 [ %gs, %spin ]
  ; the chunk may have been run by the caller already (stolen): claim it
  %claimp = getelementptr %slot, ptr %slot, i32 0, i32 6
  %cx = cmpxchg ptr %claimp, i32 0, i32 1 seq_cst seq_cst
  %mine = extractvalue {{ i32, i1 }} %cx, 1
  br i1 %mine, label %run.chunk, label %next
run.chunk:
  %fn = load ptr, ptr %fnp, align 8
  %cl = load ptr, ptr %clp, align 8
  %me = load i64, ptr %lop, align 8
  call void @__tvmd_pool_drain(ptr %fn, ptr %cl, i64 %me)
  %left = atomicrmw sub ptr @__tvmd_pool_pending, i32 1 seq_cst
  %last = icmp eq i32 %left, 1
  br i1 %last, label %notify, label %next
notify:
  %w = load atomic i32, ptr @__tvmd_pool_waiting seq_cst, align 4
  %asleep = icmp ne i32 %w, 0
  br i1 %asleep, label %wake, label %next
wake:
  call void @__tvmd_futex_wake(ptr @__tvmd_pool_pending)
  br label %next
next:
  br label %wait
}}

define void @__tvmd_parallel_for(ptr %fn, ptr %closure, i64 %begin, i64 %end) {{
entry:
  %tid = alloca i64, align 8
  %n = sub i64 %end, %begin
  %want = call i64 @__tvmd_num_threads()
  %nlt = icmp slt i64 %n, %want
  %nt0 = select i1 %nlt, i64 %n, i64 %want
  %multi = icmp sgt i64 %nt0, 1
  br i1 %multi, label %lock, label %serial
serial:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %serial.run, label %return
serial.run:
  call void %fn(ptr %closure, i64 %begin, i64 %end)
  br label %return
return:
  ret void
lock:
  ; the lock word is the holder's pid: a holder from another pid is a thread
  ; of the process we were forked from, which does not exist here
  %pid = call i32 @getpid()
  %cx = cmpxchg ptr @__tvmd_pool_busy, i32 0, i32 %pid seq_cst seq_cst
  %locked = extractvalue {{ i32, i1 }} %cx, 1
  br i1 %locked, label %hook, label %lock.held
lock.held:
  %holder = extractvalue {{ i32, i1 }} %cx, 0
  %foreign = icmp ne i32 %holder, %pid
  br i1 %foreign, label %lock.take, label %serial
lock.take:
  %cx2 = cmpxchg ptr @__tvmd_pool_busy, i32 %holder, i32 %pid seq_cst seq_cst
  %took = extractvalue {{ i32, i1 }} %cx2, 1
  br i1 %took, label %hook, label %serial
hook:
  ; after fork the child has none of the parent's workers
  %owner = load i32, ptr @__tvmd_pool_pid, align 4
  %forked = icmp ne i32 %pid, %owner
  br i1 %forked, label %hook.reset, label %grow
hook.reset:
  store i32 %pid, ptr @__tvmd_pool_pid, align 4
  store i64 0, ptr @__tvmd_pool_size, align 8
  br label %grow
grow:
  %need0 = sub i64 %nt0, 1
  %big = icmp sgt i64 %need0, {MAXW}
  %need = select i1 %big, i64 {MAXW}, i64 %need0
  %have0 = load i64, ptr @__tvmd_pool_size, align 8
  br label %grow.loop
grow.loop:
  %have = phi i64 [ %have0, %grow ], [ %have1, %grow.ok ]
  %short = icmp slt i64 %have, %need
  br i1 %short, label %grow.make, label %split
grow.make:
  %newslot = getelementptr [{MAXW} x %slot], ptr @__tvmd_pool_slots, i64 0, i64 %have
  ; a new worker starts at generation 0 (the slot may be reused after fork)
  store i32 0, ptr %newslot, align 4
  %newsleep = getelementptr %slot, ptr %newslot, i32 0, i32 1
  store i32 0, ptr %newsleep, align 4
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @__tvmd_pool_worker, ptr %newslot)
  %made = icmp eq i32 %rc, 0
  br i1 %made, label %grow.ok, label %split
grow.ok:
  %t_id = load i64, ptr %tid, align 8
  %drc = call i32 @pthread_detach(i64 %t_id)
  %have1 = add i64 %have, 1
  store i64 %have1, ptr @__tvmd_pool_size, align 8
  br label %grow.loop
split:
  %workers = phi i64 [ %have, %grow.loop ], [ %have, %grow.make ]
  %cap = add i64 %workers, 1
  %clt = icmp slt i64 %nt0, %cap
  %nt = select i1 %clt, i64 %nt0, i64 %cap
  ; grain = ceil(n / (nt * CHUNKS)): a thread slowed down by another
  ; process has the rest of its range taken by the others
  %parts = mul i64 %nt, {CHUNKS}
  %a1 = add i64 %n, %parts
  %a2 = sub i64 %a1, 1
  %grain = sdiv i64 %a2, %parts
  store i64 %begin, ptr @__tvmd_pool_job, align 8
  %jn = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 1
  store i64 %n, ptr %jn, align 8
  %jnt = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 2
  store i64 %nt, ptr %jnt, align 8
  %jg = getelementptr {{ i64, i64, i64, i64 }}, ptr @__tvmd_pool_job, i32 0, i32 3
  store i64 %grain, ptr %jg, align 8
  br label %ranges
ranges:
  %r = phi i64 [ 0, %split ], [ %r1, %ranges.body ]
  %rmore = icmp slt i64 %r, %nt
  br i1 %rmore, label %ranges.body, label %ranges.done
ranges.body:
  %rm = mul i64 %r, %n
  %rq = sdiv i64 %rm, %nt
  %rstart = add i64 %begin, %rq
  %rcp = getelementptr [{MAXT} x %ctr], ptr @__tvmd_pool_ctr, i64 0, i64 %r, i32 0
  store atomic i64 %rstart, ptr %rcp monotonic, align 8
  %r1 = add i64 %r, 1
  br label %ranges
ranges.done:
  %nw = sub i64 %nt, 1
  %nw32 = trunc i64 %nw to i32
  store atomic i32 %nw32, ptr @__tvmd_pool_pending seq_cst, align 4
  br label %sig
sig:
  %t = phi i64 [ 1, %ranges.done ], [ %t1, %sig.next ]
  %tmore = icmp slt i64 %t, %nt
  br i1 %tmore, label %sig.body, label %run0
sig.body:
  %w = sub i64 %t, 1
  %sp = getelementptr [{MAXW} x %slot], ptr @__tvmd_pool_slots, i64 0, i64 %w
  %sfn = getelementptr %slot, ptr %sp, i32 0, i32 2
  store ptr %fn, ptr %sfn, align 8
  %scl = getelementptr %slot, ptr %sp, i32 0, i32 3
  store ptr %closure, ptr %scl, align 8
  %slo = getelementptr %slot, ptr %sp, i32 0, i32 4
  store i64 %t, ptr %slo, align 8
  %sclaim = getelementptr %slot, ptr %sp, i32 0, i32 6
  store atomic i32 0, ptr %sclaim seq_cst, align 4
  %sgen = getelementptr %slot, ptr %sp, i32 0, i32 0
  %gold = load atomic i32, ptr %sgen monotonic, align 4
  %gnew = add i32 %gold, 1
  store atomic i32 %gnew, ptr %sgen seq_cst, align 4
  %ssl = getelementptr %slot, ptr %sp, i32 0, i32 1
  %slept = load atomic i32, ptr %ssl seq_cst, align 4
  %isasleep = icmp ne i32 %slept, 0
  br i1 %isasleep, label %sig.wake, label %sig.next
sig.wake:
  call void @__tvmd_futex_wake(ptr %sgen)
  br label %sig.next
sig.next:
  %t1 = add i64 %t, 1
  br label %sig
run0:
  call void @__tvmd_pool_drain(ptr %fn, ptr %closure, i64 0)
  br label %cancel
cancel:
  ; every iteration has been taken: a worker that has not claimed its slot
  ; yet (descheduled, or still waking up) is cancelled rather than waited for
  %u = phi i64 [ 1, %run0 ], [ %u1, %cancel.next ]
  %umore = icmp slt i64 %u, %nt
  br i1 %umore, label %cancel.try, label %join
cancel.try:
  %uw = sub i64 %u, 1
  %up = getelementptr [{MAXW} x %slot], ptr @__tvmd_pool_slots, i64 0, i64 %uw
  %uclaim = getelementptr %slot, ptr %up, i32 0, i32 6
  %ucx = cmpxchg ptr %uclaim, i32 0, i32 2 seq_cst seq_cst
  %cancelled = extractvalue {{ i32, i1 }} %ucx, 1
  br i1 %cancelled, label %cancel.run, label %cancel.next
cancel.run:
  %uleft = atomicrmw sub ptr @__tvmd_pool_pending, i32 1 seq_cst
  br label %cancel.next
cancel.next:
  %u1 = add i64 %u, 1
  br label %cancel
join:
  %j = phi i32 [ 0, %cancel ], [ %j1, %join.next ], [ 0, %join.woke ]
  %p = load atomic i32, ptr @__tvmd_pool_pending acquire, align 4
  %finished = icmp eq i32 %p, 0
  br i1 %finished, label %done, label %join.next
join.next:
{PAUSE}  %j1 = add i32 %j, 1
  %jmore = icmp ult i32 %j1, {SPIN}
  br i1 %jmore, label %join, label %join.sleep
join.sleep:
  store atomic i32 1, ptr @__tvmd_pool_waiting seq_cst, align 4
  %p2 = load atomic i32, ptr @__tvmd_pool_pending seq_cst, align 4
  %fin2 = icmp eq i32 %p2, 0
  br i1 %fin2, label %join.woke, label %join.wait
join.wait:
  call void @__tvmd_futex_wait(ptr @__tvmd_pool_pending, i32 %p2, ptr @__tvmd_join_timeout)
  br label %join.woke
join.woke:
  store atomic i32 0, ptr @__tvmd_pool_waiting seq_cst, align 4
  br label %join
done:
  store atomic i32 0, ptr @__tvmd_pool_busy release, align 4
  ret void
}}
"""

_RUNTIME_FUNCS = ("__tvmd_parallel_for", "__tvmd_num_threads")
_process_runtime = None   # (engine, {name: address}): the JIT's shared pool, never freed
_process_runtime_lock = threading.Lock()   # llvmlite drops the GIL: two threads may compile at once


def needs_runtime(llmod) -> bool:
    """Whether a binding module calls the runtime (declares it, undefined)."""
    try:
        f = llmod.get_function(PARALLEL_FOR)
    except NameError:
        return False
    return f.is_declaration


def link_runtime(llmod, triple: str):
    """Link the runtime into `llmod` (a binding ModuleRef), internal linkage."""
    import llvmlite.binding as llvm
    rt = llvm.parse_assembly(runtime_ir(triple))
    rt.triple = llmod.triple
    rt.data_layout = llmod.data_layout
    llmod.link_in(rt)
    for name in _RUNTIME_FUNCS:
        llmod.get_function(name).linkage = "internal"


def process_runtime(make_target_machine):
    """Compile the runtime once per process and register its symbols with
    the JIT (``llvm.add_symbol``), so that every JIT'd kernel shares it.
    `make_target_machine()` gives the (host) machine, called only the first
    time."""
    global _process_runtime
    with _process_runtime_lock:
        if _process_runtime is None:
            _process_runtime = _compile_runtime(make_target_machine)
    return _process_runtime[1]


def _compile_runtime(make_target_machine):
    import llvmlite.binding as llvm

    from .jit import engine_for_ir
    target_machine = make_target_machine()
    ee = engine_for_ir(runtime_ir(target_machine.triple), target_machine)
    addrs = {n: ee.get_function_address(n) for n in _RUNTIME_FUNCS}
    for n, a in addrs.items():
        llvm.add_symbol(n, a)
    ee.detach()   # never disposed: idle workers sleep inside this code
    return ee, addrs


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
