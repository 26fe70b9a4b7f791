"""Parse + verify + print throughput, and tool start-up.

    python bench/parse_print.py [--sizes 10000,100000] [--no-anchor]

For each size N it writes a relay module of N chained ops (and a TIR module
of about N ops in loop nests), runs `tvm-opt FILE -o /dev/null` in a fresh
process and reports ops/s and peak memory; with xdsl installed it runs
`xdsl-opt` on an arith chain of the same length in the same run, as the
anchor.  Start-up is `tvm-opt --help`, best of 5.  Prints numbers, never
passes or fails.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def relay_chain(n):
    lines = ["relay.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {"]
    prev = "%a"
    ops = ["add", "multiply", "nn.relu", "subtract"]
    for i in range(n - 1):
        op = ops[i % 4]
        args = f"({prev})" if op == "nn.relu" else f"({prev}, %b)"
        lines.append(f"  %v{i} = {op}{args} : tensor<16xf32>")
        prev = f"%v{i}"
    lines.append(f"  return {prev}\n}}\n")
    return "\n".join(lines)


def tir_nests(n):
    """Functions of 2 nested loops with 8 body ops each: about n ops in all."""
    out = []
    per = 11
    for f in range(max(n // per, 1)):
        out.append(f"""tir.func @k{f}(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {{
  tir.for %i = 0 to 64 parallel {{
    tir.for %j = 0 to 64 vectorized {{
      %a = tir.load %A[%i, %j] : f32
      %b = tir.load %B[%j, %i] : f32
      %s = arith.addf %a, %b : f32
      %m = arith.mulf %s, %a : f32
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %m, %z : f32
      tir.store %r, %B[%i, %j] : f32
    }}
  }}
}}
""")
    return "\n".join(out)


def arith_chain(n):
    lines = ["func.func @main(%a: f32) -> f32 {"]
    prev = "%a"
    for i in range(n):
        lines.append(f"  %v{i} = arith.addf {prev}, %a : f32")
        prev = f"%v{i}"
    lines.append(f"  func.return {prev} : f32\n}}\n")
    return "\n".join(lines)


def timed(cmd):
    """Wall time and peak RSS (MiB) of a command run in a child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return dt, usage.ru_maxrss / 1024


def find(name):
    return shutil.which(name, path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--no-anchor", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    opt = find("tvm-opt") or sys.exit("tvm-opt is not installed")
    xdsl = None if args.no_anchor else find("xdsl-opt")
    tmp = tempfile.mkdtemp()
    subprocess.run([opt, "-"], input="relay.func @w(%a: tensor<4xf32>) {\n return %a\n}\n", capture_output=True,
                   text=True)  # build the grammar cache once, as any second run would find it
    print(f"{'input':<28}{'ops':>8}{'seconds':>10}{'ops/s':>10}{'MiB':>8}   anchor (xdsl-opt, same op count)")
    for n in sizes:
        for kind, gen in (("relay chain", relay_chain), ("tir loop nests", tir_nests)):
            path = os.path.join(tmp, f"{kind.split()[0]}_{n}.mlir")
            text = gen(n)
            with open(path, "w") as f:
                f.write(text)
            nops = n if kind == "relay chain" else (n // 11) * 11
            dt, mem = timed([opt, path, "-o", os.devnull])
            anchor = ""
            if xdsl and kind == "relay chain":
                apath = os.path.join(tmp, f"arith_{n}.mlir")
                with open(apath, "w") as f:
                    f.write(arith_chain(n))
                adt, amem = timed([xdsl, apath, "-o", os.devnull])
                anchor = f"{n / adt:8.0f} ops/s {amem:6.0f} MiB  -> tvmd/xdsl = {adt / dt:.2f}x"
            print(f"{kind:<28}{nops:>8}{dt:>10.2f}{nops / dt:>10.0f}{mem:>8.0f}   {anchor}")
    best = min(timed([opt, "--help"])[0] for _ in range(5))
    line = f"tvm-opt --help: {best:.3f} s (best of 5)"
    if xdsl:
        xb = min(timed([xdsl, "--help"])[0] for _ in range(3))
        line += f"; xdsl-opt --help: {xb:.3f} s"
    tr = find("tvm-translate")
    if tr:
        line += f"; tvm-translate --help: {min(timed([tr, '--help'])[0] for _ in range(5)):.3f} s"
    print(line)


if __name__ == "__main__":
    main()
