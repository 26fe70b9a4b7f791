"""Shrink a failing input to a small reproducer with the same signature.

Text: ddmin (Zeller's delta debugging) over lines, then over tokens, keeping
a candidate when it still fails with the same signature.  ONNX: greedy
removal of nodes, then of initializers, then of attributes, at the protobuf
level.  Each check is one run; ``budget`` bounds the runs.
"""

from __future__ import annotations

import dataclasses


def _still_fails(runner, job, signature, data):
    out = runner.run(dataclasses.replace(job, data=data))
    return out.signature == signature


def ddmin(parts, test, budget):
    """The smallest sublist of `parts` (1-minimal within `budget` tests)
    for which test(sublist) holds; test(parts) must hold."""
    n = 2
    runs = 0
    while len(parts) >= 2 and runs < budget:
        chunk = max(1, len(parts) // n)
        subsets = [parts[i:i + chunk] for i in range(0, len(parts), chunk)]
        reduced = False
        for i in range(len(subsets)):
            if runs >= budget:
                break
            complement = [p for j, s in enumerate(subsets) if j != i for p in s]
            runs += 1
            if complement and test(complement):
                parts, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(parts):
                break
            n = min(len(parts), n * 2)
    return parts


def minimise_text(runner, job, signature, budget=300):
    import re

    def test_lines(lines):
        return _still_fails(runner, job, signature, "".join(lines).encode("utf-8", "surrogateescape"))

    text = job.data.decode("utf-8", "surrogateescape")
    lines = ddmin(text.splitlines(keepends=True), test_lines, budget // 2)
    toks = re.findall(r"\s+|[^\s]+", "".join(lines))
    toks = ddmin(toks, test_lines, budget // 2)
    return "".join(toks).encode("utf-8", "surrogateescape")


def minimise_onnx(runner, job, signature, budget=200):
    import onnx

    def parse(data):
        m = onnx.ModelProto()
        m.ParseFromString(data)
        return m

    try:
        cur = parse(job.data)
    except Exception:
        return job.data
    runs = 0

    def shrink(containers_of):
        """Drop each item of the containers `containers_of(model)` names,
        last first, keeping each drop that still fails."""
        nonlocal cur, runs
        for k in range(len(containers_of(cur))):
            i = len(containers_of(cur)[k]) - 1
            while i >= 0 and runs < budget:
                cand = parse(cur.SerializeToString())
                del containers_of(cand)[k][i]
                runs += 1
                if _still_fails(runner, job, signature, cand.SerializeToString()):
                    cur = cand
                i -= 1

    shrink(lambda m: [m.graph.node, m.graph.initializer])
    shrink(lambda m: [n.attribute for n in m.graph.node])
    return cur.SerializeToString()
