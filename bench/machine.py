"""This machine's limits, read off the machine (never assumed): the fp32
FLOP/s its cores can issue and the bandwidth memcpy reaches.  A benchmark
prints its figures beside these; one above them is a measurement bug.

peak GFLOP/s = cores x fp32 FLOP per cycle x GHz, where FLOP per cycle is
what the widest FMA the flags name can issue on two FMA ports (AVX-512:
16 lanes x 2 x 2 = 64; AVX2+FMA: 32; SSE only: 8) and GHz is the highest
clock the kernel reports (cpufreq's maximum where it exists, else
/proc/cpuinfo's "cpu MHz": a turbo clock above it would raise the limit).
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


def peak_gflops(threads: int | None = None) -> float:
    """fp32 GFLOP/s of `threads` cores (all this process may use by default)."""
    info = _cpuinfo()
    return (threads or cores()) * flop_per_cycle(info) * ghz(info)


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
    return (f"machine limit: {n} cores x {flop_per_cycle(info)} fp32 FLOP/cycle x {ghz(info):.2f} GHz = "
            f"{peak_gflops(n):.0f} GFLOP/s; memcpy {memcpy_gbs():.1f} GB/s")


if __name__ == "__main__":
    print(describe())
