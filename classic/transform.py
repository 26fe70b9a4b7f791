"""``tvm.transform``: PassContext and Sequential over tvmd's pass manager.

    with tvm.transform.PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        mod = tvm.transform.Sequential([relay.transform.FoldConstant(), relay.transform.FuseOps()])(mod)
        lib = relay.build(mod, target="llvm")

A pass object runs a tvmd pipeline (its ``pipeline`` text, what tvm-opt
would run) on a copy of the module and returns the new IRModule, as TVM's
passes do.  A pass named in the current context's ``disabled_pass`` (by
TVM's name) is skipped; ``opt_level`` is what ``relay.build`` compiles at.
"""

from __future__ import annotations

from .expr import TVMError


class PassContext:
    _stack: list = []

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, config=None, instruments=None,
                 trace=None):
        self.opt_level = int(opt_level)
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.config = dict(config or {})

    def __enter__(self):
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc):
        PassContext._stack.pop()

    @staticmethod
    def current():
        return PassContext._stack[-1] if PassContext._stack else PassContext()


class Pass:
    """A tvmd pipeline under TVM's pass name."""

    def __init__(self, name, pipeline):
        self.name, self.pipeline = name, pipeline

    def __call__(self, mod):
        from .build import IRModule, _run
        if not isinstance(mod, IRModule):
            raise TVMError(f"{self.name} runs on an IRModule, got {type(mod).__name__}")
        if self.name in PassContext.current().disabled_pass or not self.pipeline:
            return mod
        m = mod.module.clone()
        _run(m, self.pipeline)
        return IRModule(m)

    def __repr__(self):
        return f"<Pass {self.name}: {self.pipeline}>"


class Sequential(Pass):
    def __init__(self, passes=None, opt_level=0, name="sequential", required=None):
        self.passes = list(passes or [])
        super().__init__(name, "")

    def __call__(self, mod):
        for p in self.passes:
            mod = p(mod)
        return mod


__all__ = ["PassContext", "Pass", "Sequential"]
