"""Classic AutoTVM's measure options, mapped onto :class:`~.measure.MeasureOption`.

    option = autotvm.measure_option(builder=autotvm.LocalBuilder(timeout=10),
                                    runner=autotvm.LocalRunner(number=5, repeat=3))
    tuner.tune(n_trial=100, measure_option=option)

``measure_option`` returns a MeasureOption (what our tuners and
LocalMeasurer take).  Each classic argument maps to one field; arguments
that have no meaning here are accepted and ignored where harmless
(``cooldown_interval``, ``do_fork``) and refused where ignoring them would
change what is measured (a custom ``build_func``, ``module_loader``,
``runtime``).  Defaults are AutoTVM's (timeout 10 s each, number 4,
repeat 3).  This module imports nothing heavy: it is imported with
``tvmd.autotvm``.
"""

from __future__ import annotations


class LocalBuilder:
    """Builds each config in a local worker process (``n_parallel`` of
    them, default the cores; ``timeout`` seconds per build)."""

    def __init__(self, timeout=10, n_parallel=None, build_kwargs=None, build_func="default", do_fork=False,
                 runtime=None):
        if build_func != "default":
            raise ValueError("LocalBuilder: only build_func='default' is supported (tvmd builds LLVM object "
                             "code in its own workers)")
        if build_kwargs or runtime is not None:
            raise ValueError("LocalBuilder: build_kwargs and runtime are not supported")
        self.timeout = float(timeout)
        self.n_parallel = int(n_parallel) if n_parallel else 0


class LocalRunner:
    """Runs each built config in an isolated local process: ``repeat``
    timed rounds of ``number`` calls (number grown until a round lasts
    ``min_repeat_ms``), ``timeout`` seconds for the whole run,
    ``enable_cpu_cache_flush`` to flush the caches before each round."""

    def __init__(self, timeout=10, number=4, repeat=3, min_repeat_ms=0, cooldown_interval=0.1,
                 enable_cpu_cache_flush=False, module_loader=None):
        if module_loader is not None:
            raise ValueError("LocalRunner: module_loader is not supported")
        self.timeout = float(timeout)
        self.number = int(number)
        self.repeat = int(repeat)
        self.min_repeat_ms = float(min_repeat_ms)
        self.cooldown_interval = cooldown_interval   # accepted; runs are back to back
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)


def measure_option(builder=None, runner=None):
    """The :class:`~.measure.MeasureOption` of a builder and a runner
    (``"local"`` or None: the defaults)."""
    from .measure import MeasureOption
    if builder is None or builder == "local":
        builder = LocalBuilder()
    if runner is None or runner == "local":
        runner = LocalRunner()
    if not isinstance(builder, LocalBuilder):
        raise TypeError(f"measure_option: builder must be autotvm.LocalBuilder(...), got {builder!r}")
    if not isinstance(runner, LocalRunner):
        raise TypeError(f"measure_option: runner must be autotvm.LocalRunner(...) (RPC runners are not "
                        f"supported), got {runner!r}")
    return MeasureOption(number=runner.number, repeat=runner.repeat, min_repeat_ms=runner.min_repeat_ms,
                         timeout=runner.timeout, build_timeout=builder.timeout, n_parallel=builder.n_parallel,
                         flush_cache=runner.enable_cpu_cache_flush)
