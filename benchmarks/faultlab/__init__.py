"""The fault harness of ``benchmarks/faults.py``, by role: ``procs`` (a sweep's processes),
``inject`` (the faults), ``checks`` (what a sweep folder says after them), ``experiments`` (the
three kinds, each against a fault-free run), ``report`` (results/RELIABILITY.md), ``cli``."""
