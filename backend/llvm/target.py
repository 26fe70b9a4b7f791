"""The LLVM CPU target: triple, CPU and features, and its target machine.

Defaults are the host's: ``llvm`` alone means this machine's triple, its CPU
name as LLVM knows it (``znver3``) and its feature string, because a
generic x86-64 target has no AVX or FMA and runs matmuls several times
slower (TVM 0.27 silently falls back to generic on ``-mcpu=native``; we do
not).  ``-mcpu=native`` is the host CPU too.  Given an explicit CPU, the
features are that CPU's own plus ``-mattr``.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from ..spec import TargetError

_initialized = set()

# LLVM's global context, which llvmlite parses every module into, is not
# thread-safe, and llvmlite drops the GIL inside LLVM: two threads that
# compile at once crash the process.  Every use of LLVM here (initialising,
# parsing, optimising, linking, emitting, creating engines) holds this one
# re-entrant lock, so compiling from several threads is safe (and serial).
LLVM_LOCK = threading.RLock()


def llvm_serialized(fn):
    """`fn` runs holding :data:`LLVM_LOCK`."""
    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with LLVM_LOCK:
            return fn(*args, **kwargs)
    return locked


@llvm_serialized
def init_llvm(native_only: bool = True):
    """Initialise llvmlite's targets once (all of them for cross targets)."""
    import llvmlite.binding as llvm
    if "native" not in _initialized:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialized.add("native")
        _load_compiler_runtime(llvm)
    if not native_only and "all" not in _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized.add("all")
    return llvm


def _load_compiler_runtime(llvm):
    """Make libgcc's soft-float helpers resolvable by the JIT: a conversion with
    no instruction (f64 -> f16 is ``__truncdfhf2``) is a libcall, and an
    unresolved one is a jump to address 0."""
    import ctypes.util
    name = ctypes.util.find_library("gcc_s")
    if name:
        try:
            llvm.load_library_permanently(name)
        except RuntimeError:
            pass


@dataclass(frozen=True)
class LLVMTarget:
    kind = "llvm"
    triple: str | None = None   # None: the host's
    mcpu: str | None = None     # None or "native": the host CPU
    mattr: str = ""             # "+avx2,-avx512f"

    @classmethod
    def from_options(cls, opts):
        mattr = ""
        if "mattr" in opts:
            value, off = opts["mattr"]
            pos = off
            for f in value.split(","):
                if not f or f[0] not in "+-" or len(f) < 2:
                    raise TargetError(f"bad feature '{f}' in -mattr: write +feature or -feature", pos)
                pos += len(f) + 1
            mattr = value
        mcpu = opts["mcpu"][0] if "mcpu" in opts else None
        triple = opts["mtriple"][0] if "mtriple" in opts else None
        t = cls(triple, mcpu, mattr)
        if mcpu not in (None, "native") or mattr:
            t.validate({k: v[1] for k, v in opts.items()})
        return t

    def validate(self, offsets=None):
        """Check -mcpu and -mattr against LLVM's own tables for the triple, so
        that LLVM never sees a CPU or feature it would abort on (``LLVM
        ERROR``, SIGABRT).  Raises TargetError at the option's offset in the
        target string (`offsets`: option name -> offset of its value)."""
        offsets = offsets or {}
        llvm = init_llvm(native_only=self.triple is None)
        triple = self.triple or llvm.get_process_triple()
        try:
            llvm.Target.from_triple(triple)
        except RuntimeError as e:
            raise TargetError(f"unknown target triple '{triple}': {e}", offsets.get("mtriple", 0)) from None
        info = target_info(triple)
        if info is None:   # LLVM would not list them: let it decide
            return
        cpus, features = info
        if self.mcpu not in (None, "native", "generic") and self.mcpu not in cpus:
            raise TargetError(f"unknown CPU '{self.mcpu}' for target '{triple}'{_did_you_mean(self.mcpu, cpus)}",
                              offsets.get("mcpu", 0))
        pos = offsets.get("mattr", 0)
        for f in self.mattr.split(",") if self.mattr else ():
            name = f[1:]
            if name not in features:
                raise TargetError(f"unknown CPU feature '{name}' for target '{triple}'"
                                  f"{_did_you_mean(name, features)}", pos)
            why = _denied(triple, f)
            if why:
                raise TargetError(f"feature '{f}' cannot be used with target '{triple}': {why}", pos)
            pos += len(f) + 1

    def __str__(self):
        parts = ["llvm"]
        if self.triple:
            parts.append(f"-mtriple={self.triple}")
        if self.mcpu:
            parts.append(f"-mcpu={self.mcpu}")
        if self.mattr:
            parts.append(f"-mattr={self.mattr}")
        return " ".join(parts)

    @property
    def is_host(self) -> bool:
        import llvmlite.binding as llvm
        return self.triple is None or self.triple == llvm.get_process_triple()

    def resolved(self):
        """(triple, cpu, features) with the host defaults filled in."""
        llvm = init_llvm(native_only=self.triple is None)
        triple = self.triple or llvm.get_process_triple()
        host_cpu = self.mcpu in (None, "native")
        if host_cpu and self.triple is not None and triple != llvm.get_process_triple():
            cpu, features = "generic", ""
        elif host_cpu:
            cpu = llvm.get_host_cpu_name()
            features = llvm.get_host_cpu_features().flatten()
        else:
            cpu, features = self.mcpu, ""
        if self.mattr:
            features = ",".join(x for x in (features, self.mattr) if x)
        return triple, cpu, features

    def target_machine(self, opt_level: int = 3, jit: bool = False):
        """An llvmlite TargetMachine; position-independent code, so that an
        object file loads anywhere (MCJIT's loader included), in the large
        code model on x86-64: the code reaches its data and the GOT through
        64-bit offsets.  In the small model it used 32-bit PC-relative ones, and
        MCJIT's loader maps code and data separately: in a large process
        (torch loaded) they could land over 2 GB apart, and llvmlite's LLVM,
        built with assertions, aborted the process in finalize_object.
        (The JIT's own "jitdefault" is the large model on x86-64 too.)"""
        llvm = init_llvm(native_only=self.triple is None)
        triple, cpu, features = self.resolved()
        try:
            t = llvm.Target.from_triple(triple)
        except RuntimeError as e:
            raise TargetError(f"unknown target triple '{triple}': {e}") from None
        if self.mcpu not in (None, "native") or self.mattr:
            self.validate()
        model = "jitdefault" if jit else "large" if triple.startswith("x86_64") else "default"
        return t.create_target_machine(cpu=cpu, features=features, opt=min(max(opt_level, 0), 3),
                                       reloc="pic", codemodel=model, jit=jit)

    def vector_unit(self) -> "VectorUnit":
        """The SIMD registers the default schedules size their tiles for."""
        triple, cpu, features = self.resolved()
        return vector_unit(triple, cpu, features)


@dataclass(frozen=True)
class VectorUnit:
    """A CPU's vector registers: `bits` wide, `registers` of them; and the
    widths (i32 lanes, widest first) of its u8 x s8 dot product vpdpbusd
    (AVX512-VNNI, AVX-VNNI) and of its bf16 pair dot product vdpbf16ps
    (AVX512-BF16, f32 lanes), none without one."""
    bits: int
    registers: int
    vnni_lanes: tuple = ()
    bf16_lanes: tuple = ()

    @property
    def dot_lanes(self) -> dict:
        """The widths above per tir dot intrinsic (tir/ops.py WORD_INTRINSICS)."""
        return {"dot4_u8s8": self.vnni_lanes, "dot2_bf16": self.bf16_lanes}

    @property
    def lanes(self) -> int:
        """f32 lanes per register."""
        return self.bits // 32

    @property
    def accumulators(self) -> int:
        """Registers a register-blocked tile may hold: with 16 of them, the
        four a micro-kernel needs besides (its loads and broadcasts) stay
        free; with 32, half, the size the schedules were first tuned at."""
        return self.registers - 4 if self.registers <= 16 else 16

    @property
    def gemm_accumulators(self) -> int:
        """Registers a GEMM's register tile may hold: all but the four its
        loads and broadcasts need.  A GEMM's tile reads one operand as
        vectors and broadcasts the other, so more rows of accumulators
        mean fewer loads per FMA (a conv's tile, block_factor, is 14 x 32
        on 32 registers); a dense or matmul's rows are capped lower
        (schedules_gemm.ROWS: each is a stream of the other operand)."""
        return self.registers - 4


# CPUs whose own features include AVX-512F (when -mcpu names one and no
# feature string is given; the host's features are read, not guessed)
_AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake", "tigerlake",
                "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids", "diamondrapids",
                "knl", "knm", "znver4", "znver5", "x86-64-v4")
# CPUs with vpdpbusd: AVX512-VNNI (every one of them has AVX512VL, so all
# three widths), or AVX-VNNI alone (256 and 128 bits)
_AVX512_VNNI_CPUS = ("cascadelake", "cooperlake", "icelake", "tigerlake", "rocketlake", "sapphirerapids",
                     "emeraldrapids", "graniterapids", "diamondrapids", "znver4", "znver5")
# CPUs with vdpbf16ps (AVX512-BF16; all of them have AVX512VL)
_AVX512_BF16_CPUS = ("cooperlake", "sapphirerapids", "emeraldrapids", "graniterapids", "diamondrapids",
                     "znver4", "znver5")
_AVX_VNNI_CPUS = ("alderlake", "raptorlake", "meteorlake", "arrowlake", "lunarlake", "gracemont",
                  "sierraforest", "grandridge", "clearwaterforest")
_AVX_CPUS = ("sandybridge", "ivybridge", "haswell", "broadwell", "skylake", "alderlake", "raptorlake",
             "meteorlake", "arrowlake", "lunarlake", "gracemont", "znver1", "znver2", "znver3",
             "bdver", "btver2", "x86-64-v3")


def vector_unit(triple: str, cpu: str, features: str) -> VectorUnit:
    """From resolved (triple, cpu, features): an explicit ``+feature`` or
    ``-feature`` decides; otherwise the CPU's family."""
    arch = triple.split("-")[0]
    if arch in ("aarch64", "arm64"):
        return VectorUnit(128, 32)
    if arch not in ("x86_64", "i386", "i686"):
        return VectorUnit(128, 16)
    flags = {f[1:]: f[0] == "+" for f in features.split(",") if f[:1] in "+-" and len(f) > 1}
    regs = 16 if arch == "x86_64" else 8
    avx512 = flags.get("avx512f", cpu.startswith(_AVX512_CPUS))
    # an AVX-512 dot product's widths: 256 and 128 bits too with AVX512VL
    avx512_widths = (16, 8, 4) if flags.get("avx512vl", True) else (16,)
    if avx512 and flags.get("avx512vnni", cpu.startswith(_AVX512_VNNI_CPUS)):
        vnni = avx512_widths
    elif flags.get("avxvnni", cpu.startswith(_AVX_VNNI_CPUS)):
        vnni = (8, 4)
    else:
        vnni = ()
    bf16 = avx512_widths if avx512 and flags.get("avx512bf16", cpu.startswith(_AVX512_BF16_CPUS)) else ()
    if avx512:
        return VectorUnit(512, 32 if arch == "x86_64" else 8, vnni, bf16)
    if flags.get("avx", cpu.startswith(_AVX512_CPUS + _AVX_CPUS)):
        return VectorUnit(256, regs, vnni)
    return VectorUnit(128, regs)


# -- LLVM's tables of CPUs and features -----------------------------------------
#
# llvmlite exposes no list of a target's CPUs or features, but LLVM prints
# both when a target machine is made for the CPU "help" ("Available CPUs for
# this target: ...", as ``llc -mcpu=help`` does).  It prints them once per
# process, so the first triple is probed in-process (stderr captured through
# a temporary file) and any later one in a child Python process; each
# triple's tables are cached for the life of the process.  Nothing is written
# to disk except the anonymous temporary file.

_tables: dict = {}

# Features that make LLVM abort or emit wrong code for a triple: (triple
# prefix, +/-feature) -> why.
_DENIED = {
    ("x86_64", "-64bit-mode"): "x86-64 code needs 64-bit mode",
    ("x86_64", "+32bit-mode"): "x86-64 code needs 64-bit mode",
    ("x86_64", "+16bit-mode"): "x86-64 code needs 64-bit mode",
    ("x86_64", "-sse"): "the x86-64 ABI passes floats in SSE registers",
    ("x86_64", "-sse2"): "the x86-64 ABI passes floats in SSE registers",
    ("x86_64", "-x87"): "the x86-64 ABI returns long doubles in x87 registers",
    ("i386", "-32bit-mode"): "32-bit x86 code needs 32-bit mode",
    ("i686", "-32bit-mode"): "32-bit x86 code needs 32-bit mode",
    ("i386", "+64bit-mode"): "not a 64-bit triple",
    ("i686", "+64bit-mode"): "not a 64-bit triple",
}


def _denied(triple, feature):
    arch = triple.split("-", 1)[0]
    if arch == "amd64":
        arch = "x86_64"
    return _DENIED.get((arch, feature))


def _did_you_mean(word, choices):
    import difflib
    close = difflib.get_close_matches(word, sorted(choices), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def parse_help(text):
    """LLVM's ``-mcpu=help`` text -> (set of CPUs, set of features), or None."""
    cpus, features, section = set(), set(), None
    for line in text.splitlines():
        if line.startswith("Available CPUs"):
            section = cpus
        elif line.startswith("Available features"):
            section = features
        elif line.startswith("  ") and section is not None:
            word = line.split()[0] if line.split() else ""
            if word and word != "-":
                section.add(word)
        elif line and not line.startswith(" "):
            section = None if not line.startswith("Available") else section
    return (cpus, features) if cpus or features else None


def _probe_in_process(triple):
    import os
    import sys
    import tempfile
    llvm = init_llvm(native_only=False)
    t = llvm.Target.from_triple(triple)
    with tempfile.TemporaryFile() as f:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(f.fileno(), 2)
            t.create_target_machine(cpu="help", features="")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return f.read().decode("utf-8", "replace")


_CHILD = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu="help", features="")
"""


def _probe_child(triple):
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD, triple], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return r.stderr.decode("utf-8", "replace") + r.stdout.decode("utf-8", "replace")


def target_info(triple):
    """(CPU names, feature names) LLVM knows for `triple`, or None when they
    cannot be listed."""
    if triple in _tables:
        return _tables[triple]
    info = None
    if not _tables.get("#probed"):
        _tables["#probed"] = True
        try:
            info = parse_help(_probe_in_process(triple))
        except (OSError, RuntimeError):
            info = None
    if info is None:
        info = parse_help(_probe_child(triple))
    _tables[triple] = info
    return info
