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
declare <{L} x float> @llvm.fma.v{L}f32(<{L} x float>, <{L} x float>, <{L} x float>)
define float @fma_peak(i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
{phis}
{fmas}
  %i1 = add i64 %i, 1
  %done = icmp eq i64 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
{sums}
  %r = extractelement <{L} x float> %s{last}, i32 0
  ret float %r
}}
"""


def _peak_kernel(chains=12):
    """(ctypes function (n) -> float running n x chains FMAs of L lanes, L)."""
    import ctypes
    from tvmd.backend.llvm.jit import engine_for_ir
    from tvmd.backend.spec import parse_target
    t = parse_target("llvm")
    lanes = t.vector_unit().lanes
    vec = f"<{lanes} x float>"
    splat = lambda x: "<" + ", ".join([f"float {x}"] * lanes) + ">"   # noqa: E731
    phis = "\n".join(f"  %a{k} = phi {vec} [{splat('1.0')}, %entry], [%b{k}, %loop]" for k in range(chains))
    fmas = "\n".join(f"  %b{k} = call {vec} @llvm.fma.v{lanes}f32({vec} %a{k}, {vec} {splat('0x3FEFFFFFC0000000')}, "
                      f"{vec} {splat('0x3EB0C6F7A0000000')})" for k in range(chains))
    sums = [f"  %s0 = fadd {vec} %b0, %b1"] + [f"  %s{k - 1} = fadd {vec} %s{k - 2}, %b{k}" for k in range(2, chains)]
    text = _PEAK_IR.format(L=lanes, phis=phis, fmas=fmas, sums="\n".join(sums), last=chains - 2)
    engine = engine_for_ir(text, t.target_machine(3, jit=True))
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64)(engine.get_function_address("fma_peak"))
    fn._engine = engine   # keep the code alive
    return fn, lanes, chains


_MEASURED = {}


def measured_peak_gflops(threads: int | None = None, runs: int = 10) -> float:
    """fp32 GFLOP/s that `threads` cores (all by default) reach on
    independent FMAs, each core running the loop at once; best of `runs`."""
    import threading
    n = threads or cores()
    if n in _MEASURED:
        return _MEASURED[n]
    fn, lanes, chains = _peak_kernel()
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
        best = max(best, n * steps * chains * lanes * 2 / (time.perf_counter() - t0) / 1e9)
    _MEASURED[n] = best
    return best


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
