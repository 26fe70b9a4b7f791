"""Dialects: builtin, arith, relay, te, tir (each a package with its ops,
its ``.lark`` syntax and the parse callbacks in ``syntax.py``)."""
