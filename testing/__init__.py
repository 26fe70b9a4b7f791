"""Helpers that ship in the package for tests and benchmarks, never imported
by the library itself: random relay programs (hypothesis strategies), the
pass manager's failure-path passes, and seeded models for quantization."""
