"""Compile CUDA C to a cubin or PTX: NVRTC in-process when its library is
present, else ``nvcc`` (``nvcc -arch=sm_90 -cubin``).

    from tvmd.backend.cuda.compile import compile_cuda, have_compiler
    cubin = compile_cuda(source, arch="sm_90")            # bytes
    ptx = compile_cuda(source, arch="sm_90", output="ptx")

A compile error raises :class:`CudaCompileError` whose ``log`` holds the
compiler's messages.  Neither path needs a GPU.
"""

from __future__ import annotations

import os
import shutil


class CudaCompileError(Exception):
    def __init__(self, message, log=""):
        super().__init__(message + (f"\n{log}" if log else ""))
        self.log = log


def find_nvcc():
    """The nvcc to use: $CUDA_HOME/bin/nvcc, then PATH, then /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    cands = [os.path.join(home, "bin", "nvcc")] if home else []
    w = shutil.which("nvcc")
    if w:
        cands.append(w)
    cands.append("/usr/local/cuda/bin/nvcc")
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


_nvrtc = None


def load_nvrtc():
    """The NVRTC library through ctypes, or None when it is not installed."""
    global _nvrtc
    if _nvrtc is None:
        import ctypes
        import ctypes.util
        lib = False
        names = [ctypes.util.find_library("nvrtc"), "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"]
        for n in names:
            if not n:
                continue
            try:
                lib = ctypes.CDLL(n)
                break
            except OSError:
                continue
        _nvrtc = lib
    return _nvrtc or None


def have_compiler() -> bool:
    return load_nvrtc() is not None or find_nvcc() is not None


def compile_cuda(source: str, arch: str = "sm_90", output: str = "cubin", options=(), use_nvrtc=None) -> bytes:
    """Compile `source` for `arch`; `output` is "cubin" or "ptx"."""
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output must be 'cubin' or 'ptx', not {output!r}")
    if use_nvrtc is None:
        use_nvrtc = load_nvrtc() is not None
    if use_nvrtc:
        return _nvrtc_compile(source, arch, output, options)
    nvcc = find_nvcc()
    if nvcc is None:
        raise CudaCompileError("no CUDA compiler: neither NVRTC nor nvcc was found")
    return _nvcc_compile(nvcc, source, arch, output, options)


def _nvcc_compile(nvcc, source, arch, output, options):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="tvmd-cuda-") as d:
        src = os.path.join(d, "kernels.cu")
        out = os.path.join(d, f"kernels.{output}")
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        cmd = [nvcc, f"-arch={arch}", f"-{output}", "-o", out, *options, src]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            raise CudaCompileError("nvcc timed out") from None
        if p.returncode != 0:
            raise CudaCompileError(f"nvcc failed (exit {p.returncode})",
                                   (p.stderr + p.stdout).replace(src, "kernels.cu").strip())
        with open(out, "rb") as f:
            return f.read()


def _nvrtc_compile(source, arch, output, options):
    import ctypes
    lib = load_nvrtc()
    prog = ctypes.c_void_p()

    def check(rc, what):
        if rc != 0:
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            raise CudaCompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(rc).decode()}", _log())

    def _log():
        n = ctypes.c_size_t()
        if lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)) != 0:
            return ""
        buf = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, buf)
        return buf.value.decode(errors="replace").strip()

    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernels.cu", 0, None, None), "create")
    try:
        arch_opt = f"--gpu-architecture={arch if output == 'cubin' else arch.replace('sm_', 'compute_')}"
        opts = [arch_opt.encode()] + [o.encode() for o in options]
        arr = (ctypes.c_char_p * len(opts))(*opts)
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if rc != 0:
            raise CudaCompileError("NVRTC compilation failed", _log())
        kind = "CUBIN" if output == "cubin" else "PTX"
        n = ctypes.c_size_t()
        check(getattr(lib, f"nvrtcGet{kind}Size")(prog, ctypes.byref(n)), f"get {kind} size")
        buf = ctypes.create_string_buffer(n.value)
        check(getattr(lib, f"nvrtcGet{kind}")(prog, buf), f"get {kind}")
        return buf.raw.rstrip(b"\0") if output == "ptx" else buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
