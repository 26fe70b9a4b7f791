"""--apply-history-best: give each template its best config from a tuning log.

    tvm-opt kernel.te --apply-history-best=tune.json --apply-schedule ...
    tvm-opt k.te --apply-history-best='log=tune.json target="llvm -mcpu=znver4"'

For each te.func with knobs, the fastest successful record of its workload
for the target (autotvm/dispatch.py) is written in place of the knobs; a
template with no record takes its defaults.  One line each says how many
templates fell back and which records were skipped and why (another target,
a changed template).  What is left are plain schedules.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.pass_manager import ModulePass, option


@dataclass
class ApplyHistoryBest(ModulePass):
    """Instantiate each AutoTVM template with the best config of a tuning log."""

    NAME = "apply-history-best"
    log: str = option("", "the tuning log (AutoTVM v0.2 JSON lines)", path=True)
    target: str = option("llvm", "the target the configs must have been tuned for")

    @classmethod
    def from_options(cls, text: str, base_offset: int = 0):
        t = text.strip()
        if t and "=" not in t and " " not in t:   # --apply-history-best=tune.json
            return cls(log=t)
        return super().from_options(text, base_offset)

    def validate(self):
        if not self.log:
            raise ValueError("needs a tuning log: --apply-history-best=tune.json")
        from ..backend.spec import TargetError, parse_target
        try:
            parse_target(self.target)
        except TargetError as e:
            raise ValueError(f"target '{self.target}': {e}") from None

    def run(self, module, ctx):
        from ..ir.diagnostics import warning
        from ..ir.location import UNKNOWN
        from .dispatch import HistoryBest, apply_best
        from .record import load
        history = HistoryBest(load(self.log), self.target, self.log)
        applied, fell_back = apply_best(module, history)
        if applied:
            ctx.stat(self, "templates given their best config", applied)
        if fell_back:
            ctx.stat(self, "templates left with their default config", fell_back)
        for line in history.report():
            warning(UNKNOWN, line)
