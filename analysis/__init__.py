"""Analysis of the suite's runs: it reads Tune experiment folders, never trainer code.

* :mod:`analysis.collect` - experiment folders -> one tidy table (one row per trial iteration);
* :mod:`analysis.tables` - time to reward, speedup, scaling, ASHA savings (pure functions);
* :mod:`analysis.plots` - learning curves, scaling and sweep plots (matplotlib, Agg);
* :mod:`analysis.report` - ``REPORT.md`` with the tables, plots and how every run was produced.

Command line: ``python -m analysis collect ...`` and ``python -m analysis report ...``.
"""
