"""XGBoost tuner against random search on real measured tasks (a
benchmark: prints numbers, never passes or fails).

For each template in bench/templates/ (matmul/dense-like, 3-4 knobs,
spaces of a few hundred to a few thousand configs) and each seed, both
tuners get the same budget of trials through a fresh LocalMeasurer.  Per
task it prints the best GFLOP/s each found, and the trials each needed to
reach 95% of the best GFLOP/s either found with that seed (a tuner that
never got there counts as the budget, marked '>'), with the ratio
random / xgb (above 1: XGBoost got there sooner).  A seed where the
default config (both tuners' first trial) is already within 95% of the
best is shown but not counted: there was nothing to search for.  Run it
on a quiet machine: the tuners' measurements are what is compared.

    python bench/tune_search.py            # 5 tasks, 200 trials, 2 seeds (~30 min)
    python bench/tune_search.py --quick    # 3 tasks, 64 trials, 2 seeds (~3 min)
    python bench/tune_search.py --replay --seeds 10 [--table-dir D] [--without-default]
    python bench/tune_search.py --replay --seeds 10 --space-limit 1000 --large --without-default

The five default templates are small (336-1344 configs) and, measured on
a quiet machine, flat at the top (82-167 configs within 95% of the best in
four of them): random search gets there in 9-15 trials and there is
nothing to compare.  The *_t templates are AutoTVM's tutorial template
(i and j each split in three, a local block over k split, an unroll
choice; 18,000-134,000 configs) and two with a loop-order knob, at shapes
beyond the caches: sampled (--space-limit), with fewer configs near the
best (1-22 of 999); --large runs the seven.  The last two of them
(matmul_256x1024_t, matmul_256x512_order_t) were added after XGBTuner's
first_fit was chosen on the other ten, to check that choice on tables it
was not picked on.

--replay takes the noise out: each task's space is measured once, and
both tuners then run over that table, seed after seed.  A space larger
than --space-limit is measured on a random sample of that many configs,
and the tuners then search that sample (every other config is marked
visited before they start), a smaller space of the same template: the
XGBoost tuner ranks all of a space left this small with its model
(SCORE_ALL) instead of annealing over it.  Measured live, two
measurements of one config differ by 5-10% on this shared machine, so
"95% of the best" is often reached or missed by the noise of a single
trial (the default config, say); from a table, a config is worth the same
to both tuners, and the target is 95% of the best config in the space.
The default schedules' numbers are hand-picked and often within 95% of
the best already (then there is nothing to search for, and the task is
not counted); --without-default takes the default out of the table, to
compare the search alone on every task.

Two more sources of noise are taken out of --replay.  A table measures
each config once, so its best can be one lucky timing (a figure above
the machine's limit, once): the table's CONFIRM fastest configs are
measured CONFIRM_TIMES more, and the median of the new timings, scaled
to the table's level (the machine's speed drifts between the two),
replaces a first timing that was faster, so the target is a speed the
best config gives again (a confirmation never makes a config faster).  And random
search's trials to the target are not sampled but computed exactly from
the table (with N configs, m of them at the target, the first hit of a
random order is at trial t with the hypergeometric probability; the
expectation is over all orders, capped at the budget like a sampled
run), so the ratio's only noise is XGBoost's seeds; the sampled random
runs are still shown beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import machine  # noqa: E402

PEAK = machine.peak_gflops()
CONFIRM, CONFIRM_TIMES = 32, 3
TEMPLATES = ["matmul_256", "matmul_512x128", "batch_matmul_8x128", "matmul_split_384", "dense_128x512"]
LARGE = ["matmul_512_t", "dense_256x768_t", "batch_matmul_12x128_t", "matmul_1024x64_t", "matmul_384_order_t",
         "matmul_256x1024_t", "matmul_256x512_order_t"]


def load_task(name):
    from tvmd.autotvm.task import extract_tasks
    from tvmd.parser import parse_module
    path = os.path.join(HERE, "templates", name + ".te")
    with open(path) as f:
        (task,), _ = extract_tasks(parse_module(f.read(), path))
    return task


def local_measurer():
    """The measurer every live measurement here uses (3 repeats of at least 5 ms)."""
    from tvmd.autotvm.measure import LocalMeasurer, MeasureOption
    return LocalMeasurer(MeasureOption(repeat=3, min_repeat_ms=5))


XGB_OPTIONS: dict = {}   # --xgb-option NAME=VALUE: more XGBTuner arguments


def run(task, kind, trials, seed, plan_size, feature_type, measurer=None, within=None):
    """[GFLOP/s of each trial's config] and the wall time, measured by
    `measurer` (a fresh LocalMeasurer by default); `within`: the configs
    the tuner may propose (every other one is marked visited)."""
    from tvmd.autotvm.tuner import make_tuner
    kw = {"plan_size": plan_size, "feature_type": feature_type, **XGB_OPTIONS} if kind == "xgb" else {}
    tuner = make_tuner(kind, task, seed=seed, **kw)
    if within is not None:
        tuner.visited.update(i for i in range(len(task.config_space)) if i not in within)
    seen = []

    def cb(t, inputs, records):
        seen.extend(task.flop / r.mean_cost / 1e9 if r.ok else 0.0 for r in records)

    t0 = time.perf_counter()
    with measurer or local_measurer() as m:
        tuner.tune(trials, measurer=m, callbacks=[cb])
    return seen, time.perf_counter() - t0


def measure_space(task, limit=None, cache=None):
    """{config index: Record} of every config of `task` (the first `limit`
    of a random order when the space is larger), each measured once; read
    from the tuning log `cache` when it exists (else written there)."""
    import random
    from tvmd.autotvm.record import LogWriter, load
    if cache and os.path.exists(cache):
        records = load(cache)
        table = {r.index: r for r in records}    # a confirmed record comes after its first one
        if len(records) - len(table) >= min(CONFIRM, len(table)) // 2:
            return table
        confirmed = confirm(task, table)
        with LogWriter(cache) as w:
            for r in confirmed:
                w.write(r)
        return table
    n = len(task.config_space)
    order = list(range(n))
    random.Random(0).shuffle(order)
    order = sorted(order[:limit]) if limit else order
    default = task.config_space.default().index
    if default not in order:
        order[0] = default
    table = {}
    with local_measurer() as m:
        m.ensure_reference(task)
        for at in range(0, len(order), 32):
            for r in m.measure(task, order[at:at + 32]):
                table[r.index] = r
    confirmed = confirm(task, table)
    if cache:
        with LogWriter(cache) as w:
            for r in list(table.values()) + confirmed:
                w.write(r)
    return table


def confirm(task, table):
    """Measure the CONFIRM fastest configs of `table` CONFIRM_TIMES more and
    replace each one's record by one holding the median of its new
    timings, scaled to the table (returned too, for the cache)."""
    import dataclasses
    top = sorted((i for i, r in table.items() if r.ok), key=lambda i: table[i].mean_cost)[:CONFIRM]
    timings = {i: [table[i].mean_cost] for i in top}
    with local_measurer() as m:
        m.ensure_reference(task)
        for _ in range(CONFIRM_TIMES):
            for r in m.measure(task, top):
                if r.ok:
                    timings[r.index].append(r.mean_cost)
    # The machine's speed drifts between the table and now (a neighbour
    # came or went): the new timings order the top configs among
    # themselves, and are scaled back to the table's level (the median of
    # the top's first timings), so they stay comparable with the rest.
    # A confirmation only ever demotes: a config timed in a quiet moment of
    # a loaded confirmation was scaled up to above the machine's limit
    # (634 GFLOP/s against 231 once, the scale being about 3), so a
    # config's confirmed cost is the slower of its table cost and its
    # scaled median.
    med = {i: statistics.median(t[1:]) if len(t) > 1 else t[0] for i, t in timings.items()}
    scale = statistics.median(t[0] for t in timings.values()) / statistics.median(med.values())
    out = []
    for i in top:
        table[i] = dataclasses.replace(table[i], costs=[max(timings[i][0], med[i] * scale)])
        out.append(table[i])
    return out


def random_expected(n, m, budget):
    """Random search's expected trials to its first of `m` target configs
    among `n` unvisited, counting one trial before it (the default config,
    measured first) and capped at `budget`: 1 + sum over t of P(no target
    in the first t draws without replacement).  With no target, the
    whole space (or the budget) is spent."""
    if m <= 0:
        return float(min(1 + n, budget))
    e, p = 1.0, 1.0
    for t in range(budget - 1):
        e += p
        p *= max(n - m - t, 0) / (n - t) if n > t else 0.0
        if p == 0.0:
            break
    return e


def replay_measurer(table):
    """A measurer that answers from a table measured once (measure_space):
    every tuner sees the same number for the same config, so two tuners are
    compared on their search alone, not on the noise of two measurements.
    A config outside the table is a failed record."""
    from tvmd.autotvm.measure import Measurer

    class Replay(Measurer):
        n_parallel = 2

        def ensure_reference(self, task):
            return None   # the table's records were checked when measured

        def measure(self, task, indices):
            return [table[i] if i in table else _missing(task, i) for i in indices]
    return Replay()


def _missing(task, index):
    from tvmd.autotvm.measure import make_record
    from tvmd.autotvm.record import FAILED_COST, ErrorNo
    return make_record(task, index, [FAILED_COST], ErrorNo.UNKNOWN_ERROR, 0.0, "not in the replay table")


def main_replay(a, names, model, base):
    """--replay: each task's space measured once, then both tuners run
    from that table with --seeds seeds; the target is 95% of the best
    config in the table (the space's best when it is measured whole)."""
    ratios = []
    print(f"replay: each space measured once (at most {a.space_limit} configs), then {a.seeds} seeds of "
          f"{model} vs {base}, {a.trials} trials each; target 95% of the table's best"
          + (" other than the default config (taken out of the table)" if a.without_default else ""))
    if a.table_dir:
        os.makedirs(a.table_dir, exist_ok=True)
    for name in names:
        task = load_task(name)
        t0 = time.perf_counter()
        table = measure_space(task, a.space_limit, a.table_dir and os.path.join(a.table_dir, name + ".json"))
        d = task.config_space.default().index
        if a.without_default:
            # the search alone: the default's hand-picked numbers are not a trial to find
            table = {i: r for i, r in table.items() if i != d}
        g = {i: task.flop / r.mean_cost / 1e9 if r.ok else 0.0 for i, r in table.items()}
        # A speed above the machine's limit is a fault of that measurement,
        # not a result: such configs are left out of the table, and counted.
        # The limit is the larger of the measured and the nominal one: the
        # measured one is low while the machine is busy (129 against 229
        # once), and read against it good configs were dropped.
        limit = max(PEAK, machine.nominal_gflops())
        over = [i for i, v in g.items() if v > 1.05 * limit]
        if over:
            print(f"  {len(over)} config(s) measured above the machine's limit of {limit:.0f} GFLOP/s "
                  f"(up to {max(g[i] for i in over):.0f}): a measurement fault; left out")
            for i in over:
                del table[i], g[i]
        best = max(g.values())
        default = g.get(d, 0.0)
        near = sum(1 for v in g.values() if v >= 0.95 * best)
        print(f"\n{name}: {len(table)} of {len(task.config_space)} configs in {time.perf_counter() - t0:.0f} s; "
              f"best {best:.1f} GFLOP/s ({100 * best / PEAK:.0f}% of peak), default {default:.1f}, "
              f"{near} config(s) within 95% of the best")
        if default >= 0.95 * best:
            print("  the default is within 95% of the best: nothing to search for, not counted")
            continue
        to = {model: [], base: []}
        for seed in range(a.seeds):
            for k in (model, base):
                seen, _ = run(task, k, a.trials, seed, a.plan_size, a.feature_type, replay_measurer(table),
                              within=table)
                to[k].append(trials_to(seen, 0.95 * best)[0])
        exact = None
        if base == "random":
            exact = random_expected(len(table), near, a.trials)   # every config of the table is a draw
        r = (exact or statistics.mean(to[base])) / statistics.mean(to[model])
        ratios.append(r)
        for k in (model, base):
            xs = to[k]
            print(f"  {k:>7}: trials to 95% mean {statistics.mean(xs):6.1f} (median {statistics.median(xs):g}, "
                  f"max {max(xs)}; {sum(1 for x in xs if x >= a.trials)} of {len(xs)} seeds never got there)")
        if exact is not None:
            print(f"   random: trials to 95% expected {exact:6.1f} (exact, over every order of the table)")
        print(f"  ratio {base}/{model} of the means: {r:.2f}" + (" (random's exact expectation)" if exact else ""))
        sys.stdout.flush()
    if ratios:
        print(f"\ngeometric mean ratio {base}/{model}: {statistics.geometric_mean(ratios):.2f} over {len(ratios)} tasks")


def trials_to(seen, target):
    for n, g in enumerate(seen, 1):
        if g >= target:
            return n, True
    return len(seen), False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 tasks, 64 trials, 2 seeds, plan size 16")
    ap.add_argument("--tasks", nargs="*", help=f"templates to run (of {', '.join(TEMPLATES + LARGE)})")
    ap.add_argument("--large", action="store_true", help="the seven *_t templates instead of the five small ones")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--plan-size", type=int, default=64)
    ap.add_argument("--feature-type", default="itervar", choices=["itervar", "knob"])
    ap.add_argument("--tuners", nargs=2, default=["xgb", "random"], metavar=("MODEL", "BASELINE"))
    ap.add_argument("--replay", action="store_true",
                    help="measure each space once, then compare the tuners on that table over --seeds seeds")
    ap.add_argument("--space-limit", type=int, default=1500, help="--replay: configs measured per task at most")
    ap.add_argument("--table-dir", help="--replay: keep each measured space here (a tuning log) and reuse it")
    ap.add_argument("--without-default", action="store_true",
                    help="--replay: take the default config out of the table (compare the search alone)")
    ap.add_argument("--xgb-option", action="append", default=[], metavar="NAME=VALUE",
                    help="another XGBTuner argument, e.g. diversity=0.1 or refit_every=16")
    a = ap.parse_args(argv)
    for opt in a.xgb_option:
        key, _, value = opt.partition("=")
        for conv in (int, float, str):
            try:
                XGB_OPTIONS[key] = conv(value)
                break
            except ValueError:
                continue
    names = a.tasks or (LARGE if a.large else TEMPLATES)
    if a.quick:
        names = a.tasks or TEMPLATES[:3]
        a.trials, a.seeds, a.plan_size = 64, 2, 16
    model, base = a.tuners
    if a.replay:
        return main_replay(a, names, model, base)
    print(f"budget {a.trials} trials, {a.seeds} seed(s), {model} (plan {a.plan_size}, "
          f"{a.feature_type} features) vs {base}; machine limit ~{PEAK:.0f} GFLOP/s fp32")
    # other work on the machine slows some measurements more than others: say how busy it was
    print("load average at start: %.1f %.1f %.1f" % os.getloadavg())
    ratios = []
    for name in names:
        task = load_task(name)
        print(f"\n{name}: {len(task.config_space)} configs, {task.flop / 1e6:.0f} MFLOP")
        rows = []
        for seed in range(a.seeds):
            res = {k: run(task, k, a.trials, seed, a.plan_size, a.feature_type) for k in (model, base)}
            best = max(max(s, default=0.0) for s, _ in res.values())
            to = {k: trials_to(s, 0.95 * best) for k, (s, _) in res.items()}
            # Both tuners measure the default config first.  Where it is
            # already within 95% of the best there is nothing to search for,
            # and which tuner "got there" at trial 1 is the noise of that
            # one measurement: such a seed is shown but left out of the ratio.
            default = statistics.mean(s[0] for s, _ in res.values() if s)
            ratio = to[base][0] / to[model][0] if default < 0.95 * best else None
            if ratio is not None:
                ratios.append(ratio)
                rows.append((to, ratio))
            cells = "  ".join(f"{k}: best {max(s, default=0):6.1f} GFLOP/s ({100 * max(s, default=0) / PEAK:4.1f}% "
                              f"of peak), 95% at {'' if to[k][1] else '>'}{to[k][0]:3d} trials, "
                              f"{dt:5.0f} s" for k, (s, dt) in res.items())
            why = f"ratio {ratio:.2f}" if ratio is not None else \
                f"default {default:.1f} GFLOP/s is within 95% of the best: not counted"
            print(f"  seed {seed}: {cells}  {why}")
            sys.stdout.flush()
        if len(rows) > 1:
            for k in (model, base):
                xs = [to[k][0] for to, _ in rows]
                print(f"  {k}: trials to 95% mean {statistics.mean(xs):.0f} (min {min(xs)}, max {max(xs)})")
            rs = [r for _, r in rows]
            print(f"  ratio {base}/{model}: mean {statistics.mean(rs):.2f} (min {min(rs):.2f}, max {max(rs):.2f})")
    if ratios:
        gm = statistics.geometric_mean(ratios)
        print(f"\ngeometric mean ratio {base}/{model} trials to 95%: {gm:.2f} over {len(ratios)} runs")
    print("load average at end: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
