"""This machine's limits, read off the machine (never assumed): the fp32
FLOP/s its cores can issue and the bandwidth memcpy reaches.  A benchmark
prints its figures beside these; one above them is a measurement bug.

The fp32 limit is measured (measured_peak_gflops): a JIT-compiled loop of
12 independent FMA chains on the target's widest vectors, one per core,
run together; best of a few runs.  A VM's /proc/cpuinfo reports the
nominal clock, and turbo runs above it (here: 2.6 GHz nominal, while
numpy's GEMM reached 105% of the nominal peak), so the nominal figure,
cores x fp32 FLOP per cycle x GHz (AVX-512: 16 lanes x 2 x 2 FMA ports
= 64 per cycle; AVX2+FMA: 32; SSE only: 8), is printed beside it and is
the fallback when the JIT is unavailable.
"""

from __future__ import annotations

import os
import time


def cores() -> int:
    return len(os.sched_getaffinity(0))


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read()
    except OSError:
        return ""


def flop_per_cycle(info: str | None = None) -> int:
    flags = set()
    for line in (info if info is not None else _cpuinfo()).splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if "avx512f" in flags:
        return 64
    if "avx2" in flags and "fma" in flags:
        return 32
    return 8


def ghz(info: str | None = None) -> float:
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq") as f:
            return int(f.read()) / 1e6
    except (OSError, ValueError):
        pass
    mhz = [float(line.split(":", 1)[1]) for line in (info if info is not None else _cpuinfo()).splitlines()
           if line.startswith("cpu MHz")]
    return max(mhz) / 1e3 if mhz else 3.0


def nominal_gflops(threads: int | None = None) -> float:
    """fp32 GFLOP/s of `threads` cores at the reported clock."""
    info = _cpuinfo()
    return (threads or cores()) * flop_per_cycle(info) * ghz(info)


_PEAK_IR = """
{decl}
define {et} @peak(i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
{phis}
{ops}
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
{sums}
  %r = extractelement {vec} %s{last}, i32 0
  ret {et} %r
}}
"""


def _peak_kernel(chains=12, int8=False):
    """(ctypes function (n) -> float running n x chains FMAs of L lanes,
    L, operations per lane and instruction); with `int8`, vpdpbusd
    (four u8 x s8 multiply-adds per i32 lane) on the widest VNNI vector."""
    import ctypes
    from tvmd.backend.llvm.intrinsics import DOT_INSTRUCTIONS
    VPDPBUSD = DOT_INSTRUCTIONS["dot4_u8s8"]
    from tvmd.backend.llvm.jit import engine_for_ir
    from tvmd.backend.spec import parse_target
    t = parse_target("llvm")
    vu = t.vector_unit()
    lanes = vu.vnni_lanes[0] if int8 else vu.lanes
    et = "i32" if int8 else "float"
    vec = f"<{lanes} x {et}>"
    splat = lambda x: "<" + ", ".join([f"{et} {x}"] * lanes) + ">"   # noqa: E731
    phis = "\n".join(f"  %a{k} = phi {vec} [{splat('1' if int8 else '1.0')}, %entry], [%b{k}, %loop]"
                      for k in range(chains))
    if int8:
        decl = f"declare {vec} @{VPDPBUSD[lanes]}({vec}, {vec}, {vec})"
        ops = "\n".join(f"  %b{k} = call {vec} @{VPDPBUSD[lanes]}({vec} %a{k}, {vec} {splat(16843009)}, "
                        f"{vec} {splat(-16843010)})" for k in range(chains))
        add, per = "add", 8
    else:
        decl = f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})"
        ops = "\n".join(f"  %b{k} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{k}, {vec} {splat('0x3FEFFFFFC0000000')}, "
                        f"{vec} {splat('0x3EB0C6F7A0000000')})" for k in range(chains))
        add, per = "fadd", 2
    sums = [f"  %s0 = {add} {vec} %b0, %b1"] + [f"  %s{k - 1} = {add} {vec} %s{k - 2}, %b{k}"
                                                for k in range(2, chains)]
    text = _PEAK_IR.format(decl=decl, vec=vec, et=et, phis=phis, ops=ops, sums="\n".join(sums), last=chains - 2)
    engine = engine_for_ir(text, t.target_machine(3, jit=True))
    ret = ctypes.c_int32 if int8 else ctypes.c_float
    fn = ctypes.CFUNCTYPE(ret, ctypes.c_int64)(engine.get_function_address("peak"))
    fn._engine = engine   # keep the code alive
    return fn, lanes, chains, per


_MEASURED = {}


def measured_peak_gflops(threads: int | None = None, runs: int = 10, int8=False) -> float:
    """fp32 GFLOP/s that `threads` cores (all by default) reach on
    independent FMAs, each core running the loop at once; best of `runs`.
    With `int8`: int8 GOP/s on vpdpbusd (a multiply-add counted as two)."""
    import threading
    n = threads or cores()
    if (n, int8) in _MEASURED:
        return _MEASURED[n, int8]
    fn, lanes, chains, per = _peak_kernel(int8=int8)
    steps = 2_000_000
    fn(1000)
    best = 0.0
    for _ in range(runs):
        ts = [threading.Thread(target=fn, args=(steps,)) for _ in range(n)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        best = max(best, n * steps * chains * lanes * per / (time.perf_counter() - t0) / 1e9)
    _MEASURED[n, int8] = best
    return best


def peak_int8_gops(threads: int | None = None) -> float | None:
    """The int8 limit of `threads` cores on vpdpbusd, measured as
    peak_gflops is; None on a CPU without VNNI."""
    from tvmd.backend.spec import parse_target
    if not parse_target("llvm").vector_unit().vnni_lanes:
        return None
    n = threads or cores()
    return max(measured_peak_gflops(n, int8=True), n * measured_peak_gflops(1, int8=True))


def peak_gflops(threads: int | None = None) -> float:
    """The fp32 limit of `threads` cores: measured (the more of the cores
    run together and one core's figure times their number: a busy
    neighbour slows the first), else nominal."""
    n = threads or cores()
    try:
        return max(measured_peak_gflops(n), n * measured_peak_gflops(1))
    except Exception:   # noqa: BLE001 - no JIT here: the nominal figure, said so by describe()
        return nominal_gflops(threads)


def memcpy_gbs(nbytes: int = 64 << 20, runs: int = 5) -> float:
    """GB/s that numpy's copyto moves (bytes read + bytes written), best of `runs`."""
    import numpy as np
    a = np.ones(nbytes // 4, np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best / 1e9


def describe(threads: int | None = None) -> str:
    """One line: the limits a figure is read against."""
    info = _cpuinfo()
    n = threads or cores()
    return (f"machine limit: {peak_gflops(n):.0f} GFLOP/s fp32 measured on {n} core(s) (nominal: "
            f"{flop_per_cycle(info)} FLOP/cycle x {ghz(info):.2f} GHz x {n} = {nominal_gflops(n):.0f}); "
            f"memcpy {memcpy_gbs():.1f} GB/s")


if __name__ == "__main__":
    print(describe())
