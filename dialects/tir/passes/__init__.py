"""tir passes, one module each, registered by name in ``tvmd.ir.registry``:

* ``tir-simplify`` (:mod:`.simplify`): constant folding, index arithmetic
  identities with range analysis, removal of empty and trivial loops and of
  provably decided ``tir.if`` guards.
"""
