"""What ``python -m sweeps.throughput`` and ``python -m sweeps.profiling`` measure with:
``timer_shares`` turns RLlib's timers into shares of wall-clock, ``perf_report`` writes the
Markdown reports (``results/*/THROUGHPUT.md``, ``results/*/PROFILE.md``)."""
