#!/usr/bin/env python3
"""Mutation fuzzing of every tool and pipeline over the repository's own IR
files and over small ONNX models.

    python bench/fuzz/fuzz.py [--mutants N] [--seed S] [--time-budget SEC]
                              [--only ir|onnx] [--workers W] [--timeout SEC]
                              [--out DIR] [--no-minimise] [--check]

Each mutant is a seed (corpus.py) with a few mutations (mutate_text.py,
mutate_onnx.py), run through one of its dialect's pipelines (PIPELINES
below) in a forked child (runner.py), and classified: ok, diagnostic, or a
finding (crash, hang, memory, traceback, internal error, a file written
outside the output, a silent failure).  The mutants are a function of
``--seed`` alone, so a run can be repeated.

At the end each distinct finding (by signature) is minimised (minimise.py)
and written to DIR/findings/ as a reproducer with the command that fails
on it; DIR/report.json has the counts.  ``--check`` exits 1 when there is
any finding: CI runs a small fixed slice that way (tests/test_fuzz_slice.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus  # noqa: E402
import minimise  # noqa: E402
import mutate_onnx  # noqa: E402
import mutate_text  # noqa: E402
from runner import FINDINGS, Job, Runner, warm_up  # noqa: E402


def _opt(*passes):
    return ("tvm-opt", ["{in}", *passes, "-o", "{out}"])


PIPELINES = {
    "relay": [
        _opt(), _opt("--canonicalize"), _opt("--infer-type", "--fold-constant", "--cse", "--dce"),
        _opt("--simplify-inference", "--fold-scale-axis", "--fuse-ops"),
        _opt("--convert-layout=nn.conv2d=NHWC", "--alter-op-layout", "--fold-constant"),
        _opt("--fuse-ops", "--lower-relay-to-te", "--apply-schedule", "--lower-te-to-tir", "--lower-tir"),
        _opt("--quantize"), _opt("--run-reproducer"),
        ("tvm-run", ["{in}", "--random-inputs"]),
    ],
    "te": [
        _opt(), _opt("--apply-schedule"), _opt("--apply-schedule", "--lower-te-to-tir", "--lower-tir"),
    ],
    "tir": [
        _opt(), _opt("--tir-simplify"), _opt("--lower-tir"),
        _opt("--tir-flatten-buffer", "--tir-loop-partition", "--tir-vectorize", "--tir-unroll",
             "--tir-remove-no-op", "--tir-storage-rewrite"),
        _opt("--tir-lower-intrin", "--tir-inject-double-buffer", "--tir-split-host-device", "--tir-thread-sync"),
        ("tvm-translate", ["{in}", "--emit=llvm", "-o", "{out}"]),
        ("tvm-translate", ["{in}", "--emit=obj", "-O2", "-o", "{out}"]),
        ("tvm-translate", ["{in}", "--emit=cuda", "-o", "{out}"]),
    ],
    "mlir": [_opt(), _opt("--canonicalize")],
    "onnx": [
        ("tvm-translate", ["--import-onnx", "{in}", "-o", "{out}"]),
        ("tvm-translate", ["--import-onnx", "{in}", "-o", "{out}"]),
        ("tvm-run", ["{in}", "--random-inputs"]),
    ],
}
ONNX_SHARE = 0.25   # of the mutants, when both kinds are fuzzed
SUFFIX = {"relay": ".relay", "te": ".te", "tir": ".tir", "mlir": ".mlir", "onnx": ".onnx"}


def mutants(seed, count, only=None):
    """Yield (Job, seed name, mutations), `count` of them, deterministically."""
    rng = random.Random(seed)
    seeds = []
    if only in (None, "ir"):
        seeds += corpus.ir_seeds()
    onnx_seeds = corpus.onnx_seeds() if only in (None, "onnx") else []
    seeds += onnx_seeds
    texts = [s.data.decode() for s in seeds if s.dialect != "onnx"]
    vocab = mutate_text.vocabulary(texts)
    lines = [ln for t in texts for ln in t.split("\n") if ln.strip() and not ln.lstrip().startswith("//")]
    op_names, attrs = mutate_onnx.seed_facts(onnx_seeds) if onnx_seeds else ([], [])
    # seeds that are meant to fail (expected-error) reach less far: draw them
    # less; ONNX models, few but each a whole importer's worth, are a quarter
    ir = [s for s in seeds if s.dialect != "onnx"]
    weights = [1 if b"expected-error" in s.data else 3 for s in ir]
    for _ in range(count):
        if onnx_seeds and (not ir or rng.random() < ONNX_SHARE):
            s = rng.choice(onnx_seeds)
        else:
            s = rng.choices(ir, weights)[0]
        if s.dialect == "onnx":
            data, done = mutate_onnx.mutate(rng, s.data, op_names, attrs)
        else:
            text, done = mutate_text.mutate(rng, s.data.decode(), vocab, lines)
            data = text.encode("utf-8", "surrogateescape")
        tool, args = rng.choice(PIPELINES[s.dialect])
        if tool == "tvm-run" and s.dialect == "relay":
            # run the seed's first function: lit seeds are rarely called @main
            m = re.search(rb"^relay\.func @([\w.$-]+)", s.data, re.M)
            if m and m.group(1) != b"main":
                args = [*args, "--entry", m.group(1).decode()]
        yield Job(tool, list(args), data, SUFFIX[s.dialect]), s.name, done


def command(job):
    return " ".join([job.tool] + [a.replace("{in}", "in" + job.suffix).replace("{out}", "out") for a in job.args])


def write_reproducer(path_base, job, out, data):
    """A reproducer file; IR text gets the command and the finding as
    comments at the top, an ONNX model gets a .txt beside it."""
    head = f"// {out.signature}\n// RUN: {command(job)}\n"
    if job.suffix == ".onnx":
        with open(path_base + ".onnx", "wb") as fh:
            fh.write(data)
        with open(path_base + ".txt", "w") as fh:
            fh.write(head + out.stderr[-4000:])
        return path_base + ".onnx"
    with open(path_base + job.suffix, "wb") as fh:
        fh.write(head.encode() + data)
    return path_base + job.suffix


def campaign(args):
    warm_up()
    work = tempfile.mkdtemp(prefix="tvmd-fuzz-")
    runner = Runner(work, timeout=args.timeout, mem_mb=args.mem_mb, workers=args.workers)
    kinds = collections.Counter()
    per_tool = collections.Counter()
    located = unlocated = 0
    unlocated_kinds = collections.Counter()   # diagnostics without file:line:col, by message shape
    findings = {}      # signature -> [job, outcome, count, seed name, mutations]
    slowest = []
    meta = {}
    t0 = time.monotonic()
    deadline = t0 + args.time_budget if args.time_budget else None

    def jobs():
        for k, (job, name, done) in enumerate(mutants(args.seed, args.mutants, args.only)):
            if deadline and time.monotonic() > deadline:
                return
            meta[id(job)] = (name, done)
            yield job

    n = 0
    for job, out in runner.run_many(jobs()):
        n += 1
        name, done = meta.pop(id(job))
        kinds[out.kind] += 1
        per_tool[(job.tool, out.kind)] += 1
        if out.kind == "diagnostic":
            if out.located:
                located += 1
            else:
                unlocated += 1
                first = next((ln for ln in out.stderr.splitlines() if "error" in ln), "")
                unlocated_kinds[re.sub(r"'[^']*'|\d+", "_", first)[:100]] += 1
        slowest = sorted(slowest + [(out.seconds, command(job), name)], reverse=True)[:5]
        if out.is_finding:
            f = findings.setdefault(out.signature, [job, out, 0, name, done])
            f[2] += 1
            if f[2] == 1 and not args.quiet:
                print(f"  new finding: {out.signature}  ({name}, {'+'.join(done)}, {command(job)})", flush=True)
        if not args.quiet and n % args.progress == 0:
            rate = n / (time.monotonic() - t0)
            print(f"{n} mutants, {rate:.1f}/s, " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()), flush=True)
    elapsed = time.monotonic() - t0

    os.makedirs(os.path.join(args.out, "findings"), exist_ok=True)
    report_findings = []
    for k, (sig, (job, out, count, name, done)) in enumerate(sorted(findings.items(), key=lambda x: -x[1][2])):
        data = job.data
        if not args.no_minimise and out.kind not in ("hang",):
            mini = minimise.minimise_onnx if job.suffix == ".onnx" else minimise.minimise_text
            data = mini(Runner(os.path.join(work, f"min{k}"), timeout=args.timeout, mem_mb=args.mem_mb,
                               workers=1), job, sig)
        path = write_reproducer(os.path.join(args.out, "findings", f"{k:03d}-{out.kind}"), job, out, data)
        report_findings.append({"signature": sig, "kind": out.kind, "count": count, "seed": name,
                                "mutations": done, "command": command(job), "reproducer": path,
                                "stderr_tail": out.stderr[-1500:]})
    report = {
        "seed": args.seed, "mutants": n, "seconds": round(elapsed, 1), "workers": runner.workers,
        "kinds": dict(kinds), "per_tool": {f"{t} {k}": v for (t, k), v in sorted(per_tool.items())},
        "diagnostics_located": located, "diagnostics_unlocated": unlocated,
        "unlocated_messages": dict(unlocated_kinds.most_common(20)),
        "slowest": [{"seconds": round(s, 2), "command": c, "seed": nm} for s, c, nm in slowest],
        "findings": report_findings,
    }
    with open(os.path.join(args.out, "report.json"), "w") as fh:
        json.dump(report, fh, indent=1)
    print(f"\n{n} mutants in {elapsed:.0f} s ({n / max(elapsed, 1e-9):.1f}/s, {runner.workers} workers)")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    print(f"diagnostics: {located} located (file:line:col), {unlocated} not")
    nfind = sum(kinds[k] for k in FINDINGS)
    print(f"findings: {nfind} mutants, {len(findings)} distinct")
    for f in report_findings:
        print(f"  {f['count']:5d}  {f['signature']}\n         {f['reproducer']}")
    print(f"report: {os.path.join(args.out, 'report.json')}")
    return 1 if (args.check and findings) else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mutants", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-budget", type=float, default=0, help="stop starting mutants after this many seconds")
    p.add_argument("--only", choices=["ir", "onnx"])
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds before a run counts as a hang")
    p.add_argument("--mem-mb", type=int, default=3072, help="address-space limit of a run")
    p.add_argument("--out", default="fuzz-out")
    p.add_argument("--progress", type=int, default=500)
    p.add_argument("--no-minimise", action="store_true")
    p.add_argument("--check", action="store_true", help="exit 1 when there is any finding")
    p.add_argument("--quiet", action="store_true")
    return campaign(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
