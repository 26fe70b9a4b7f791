"""The LLVM CPU target: triple, CPU and features, and its target machine.

Defaults are the host's: ``llvm`` alone means this machine's triple, its CPU
name as LLVM knows it (``znver3``) and its feature string, because a
generic x86-64 target has no AVX or FMA and runs matmuls several times
slower (TVM 0.27 silently falls back to generic on ``-mcpu=native``; we do
not).  ``-mcpu=native`` is the host CPU too.  Given an explicit CPU, the
features are that CPU's own plus ``-mattr``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import TargetError

_initialized = set()


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
            for f in value.split(","):
                if not f or f[0] not in "+-" or len(f) < 2:
                    raise TargetError(f"bad feature '{f}' in -mattr: write +feature or -feature", off)
            mattr = value
        mcpu = opts["mcpu"][0] if "mcpu" in opts else None
        triple = opts["mtriple"][0] if "mtriple" in opts else None
        return cls(triple, mcpu, mattr)

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
        object file loads anywhere (MCJIT's loader included)."""
        llvm = init_llvm(native_only=self.triple is None)
        triple, cpu, features = self.resolved()
        try:
            t = llvm.Target.from_triple(triple)
        except RuntimeError as e:
            raise TargetError(f"unknown target triple '{triple}': {e}") from None
        return t.create_target_machine(cpu=cpu, features=features, opt=min(max(opt_level, 0), 3),
                                       reloc="pic", codemodel="default" if not jit else "jitdefault",
                                       jit=jit)
